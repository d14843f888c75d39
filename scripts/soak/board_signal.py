"""The board model's deterministic signal, for checks that read it back from documents: the soak
and the real-BlueZ scenarios (scripts/vm/scenario.py, which gets a copy of this file)."""


def simulator_signal(sensor, seed, index):
    """mwsim's deterministic sample (MetaWearBoardModel.SimulatedBoard.signal)."""
    m = 0xFFFFFFFF
    salt = 0x9E3779B9 if sensor == "gyro" else 0x85EBCA6B
    h = ((index & m) * 0x27D4EB2F & m) ^ (seed * 0x165667B1 & m) ^ salt
    h ^= h >> 15
    h = h * 0x2C1B3C6D & m
    h ^= h >> 12
    h = h * 0x297A2D39 & m
    h ^= h >> 15

    def s16(v):
        v &= 0xFFFF
        return v - 0x10000 if v >= 0x8000 else v
    return s16(index), s16(h), s16(h >> 16)
