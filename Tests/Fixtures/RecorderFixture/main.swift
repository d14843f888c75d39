import GRDB
let pool = try DatabasePool(path: "/tmp/grdbprobe.sqlite")
try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
print(try pool.read { try Int.fetchOne($0, sql: "PRAGMA synchronous") } as Any)
print(try pool.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA synchronous") } as Any)
