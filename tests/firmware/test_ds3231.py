# The DS3231 driver against the host register model, checked byte by byte.
import t
import hal.host
from hal import civil
import ds3231

T0 = civil.to_epoch(2026, 3, 15, 13, 45, 59)  # a Sunday


def _board(**kw):
    return hal.host.board(t.tmpdir("rtc"), exit_fn=lambda code: None, **kw)


def _regs(b, start, n):
    return list(b.i2c.readfrom_mem(0x68, start, n))


def test_fresh_chip_reports_lost_power_until_set():
    b = _board()
    rtc = ds3231.DS3231(b.i2c)
    t.true(rtc.lost_power(), "a never-set chip has OSF")
    rtc.set_time(T0)
    t.true(not rtc.lost_power(), "setting the time clears OSF")


def test_set_time_writes_bcd_24h_registers():
    b = _board()
    rtc = ds3231.DS3231(b.i2c)
    rtc.set_time(T0)
    t.eq(_regs(b, 0, 7), [0x59, 0x45, 0x13, 0x07, 0x15, 0x03, 0x26])
    t.eq(rtc.datetime(), (2026, 3, 15, 13, 45, 59, 7))
    t.eq(rtc.time(), T0)


def test_time_follows_the_simulated_clock():
    b = _board()
    rtc = ds3231.DS3231(b.i2c)
    rtc.set_time(T0)
    b.clock.warp(61)
    t.eq(rtc.time(), T0 + 61)
    t.eq(_regs(b, 0, 3), [0x00, 0x47, 0x13])


def test_century_rollover_and_twelve_hour_registers():
    b = _board()
    rtc = ds3231.DS3231(b.i2c)
    rtc.set_time(civil.to_epoch(2099, 12, 31, 23, 59, 59))
    b.clock.warp(1)
    t.eq(_regs(b, 4, 3), [0x01, 0x81, 0x00])  # century bit in the month register
    t.eq(rtc.datetime()[:6], (2100, 1, 1, 0, 0, 0))
    b.i2c.writeto_mem(0x68, 2, bytes((0x40 | 0x20 | 0x11,)))  # 12 h mode, 11 PM
    t.eq(rtc.datetime()[3], 23)


def test_daily_alarm_registers_flag_and_int_pin():
    b = _board()
    rtc = ds3231.DS3231(b.i2c)
    rtc.set_time(civil.to_epoch(2026, 3, 15, 7, 29, 0))
    rtc.set_alarm_daily(7, 30, 0)
    t.eq(_regs(b, 7, 4), [0x00, 0x30, 0x07, 0x81])  # A1M4 set: any day
    t.eq(rtc.alarm(), ("daily", 1, 7, 30, 0))
    rtc.enable_alarm()
    t.eq(_regs(b, 0x0E, 1)[0] & 0x05, 0x05)  # INTCN | A1IE
    edges = []
    b.rtc_int.irq(lambda pin: edges.append(pin.value()), b.rtc_int.IRQ_FALLING)
    b.clock.warp(59)
    t.true(not rtc.alarm_fired(), "07:29:59 is not 07:30:00")
    t.eq(b.rtc_int.value(), 1)
    b.clock.warp(1)
    t.true(rtc.alarm_fired(), "A1F at 07:30:00")
    t.eq(b.rtc_int.value(), 0)
    t.eq(edges, [0])
    rtc.clear_alarm()
    t.eq(_regs(b, 0x0F, 1)[0] & 0x01, 0)
    t.eq(b.rtc_int.value(), 1)
    b.clock.warp(86400)  # the next day, same time: fires again
    t.true(rtc.alarm_fired(), "daily alarm recurs")


def test_status_flags_can_only_be_cleared_by_software():
    b = _board()
    b.i2c.writeto_mem(0x68, 0x0F, bytes((0x01,)))
    t.eq(_regs(b, 0x0F, 1)[0] & 0x01, 0, "writing 1 does not set A1F")


def test_one_shot_alarm_matches_the_date():
    b = _board()
    rtc = ds3231.DS3231(b.i2c)
    rtc.set_time(civil.to_epoch(2026, 3, 15, 9, 0, 0))
    at = civil.to_epoch(2026, 3, 17, 8, 0, 0)
    rtc.set_alarm_once(at)
    t.eq(_regs(b, 7, 4), [0x00, 0x00, 0x08, 0x17])  # DY/DT = 0, date 17
    rtc.enable_alarm()
    b.clock.warp(86400 - 3600)  # 16th, 08:00: the time matches, the date does not
    t.true(not rtc.alarm_fired(), "no match on the 16th")
    b.clock.warp(86400)
    t.true(rtc.alarm_fired(), "match on the 17th at 08:00")
    t.eq(rtc.alarm()[0], "date")


def test_disabled_alarm_sets_flag_but_not_int():
    b = _board()
    rtc = ds3231.DS3231(b.i2c)
    rtc.set_time(T0)
    rtc.set_alarm_daily(13, 46, 30)
    rtc.enable_alarm(False)
    b.clock.warp(60)
    t.true(rtc.alarm_fired(), "A1F is set regardless of A1IE")
    t.eq(b.rtc_int.value(), 1)
    t.true(not rtc.alarm_enabled(), "A1IE off")


def test_alarm_that_fell_due_while_off_wakes_the_board():
    d = t.tmpdir("off")
    exits = []
    b = hal.host.board(d, exit_fn=exits.append)
    rtc = ds3231.DS3231(b.i2c)
    rtc.set_time(T0)
    rtc.set_alarm_once(T0 + 120)
    rtc.enable_alarm()
    # The chip's clock runs on while the test does: bracket the reading
    # between two reads of it rather than expect exactly 120 s.
    before = rtc.time()
    left = b.rtc_model.seconds_to_next_alarm()
    after = rtc.time()
    t.true(T0 + 120 - after <= left <= T0 + 120 - before, "what the sim runner waits for: %r" % left)
    b.power.standby("power_off")
    t.eq(exits, [0])
    early = hal.host.board(d, exit_fn=exits.append, advance=30)
    t.eq(early.wake_cause(), "power_on", "30 s later the alarm is not due")
    early.power.standby("power_off")
    b2 = hal.host.board(d, exit_fn=exits.append, advance=100)
    t.eq(b2.wake_cause(), "alarm")
    rtc2 = ds3231.DS3231(b2.i2c)
    t.true(rtc2.alarm_fired(), "A1F survived the power-off")
    t.true(rtc2.time() >= T0 + 130, "the chip kept time while off")
