# How tasks reach the board: boot order, gateway and hand-off, alarms,
# offline command words (docs/entry.md).
