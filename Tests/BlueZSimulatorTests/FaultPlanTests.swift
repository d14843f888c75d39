import Testing
@testable import BlueZSimulator

@Suite struct FaultPlanTests {
    @Test func parsesEveryKindAndKey() throws {
        let plan = try FaultPlan(parsing: "link-drop@10s,board=1; stall@250ms,seconds=2;refuse-connect@0,error=org.bluez.Error.InProgress;drop-notifications@1.5s,board=2,fraction=0.25")
        #expect(plan.steps.count == 4)
        #expect(plan.steps[0] == FaultPlan.Step(kind: .linkDrop, at: 10, board: 1))
        #expect(plan.steps[1].kind == .stall && plan.steps[1].at == 0.25 && plan.steps[1].seconds == 2)
        #expect(plan.steps[2].error == "org.bluez.Error.InProgress")
        #expect(plan.steps[3].fraction == 0.25 && plan.steps[3].board == 2 && plan.steps[3].at == 1.5)
    }

    @Test(arguments: ["link-drop", "explode@1s", "stall@x", "stall@1s,board=-1", "drop-notifications@1s,fraction=2", "vanish@1s,colour=red"])
    func rejectsBadSpecifications(_ text: String) {
        #expect(throws: FaultPlan.ParseError.self) { try FaultPlan(parsing: text) }
    }
}
