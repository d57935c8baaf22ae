# DS3231 RTC driver at register level, on any machine.I2C-like bus
# (readfrom_mem_into / writeto_mem): the board's I2C or the host model.
#
# Time is kept in 24 h mode, as Unix seconds in UTC (hal.civil), years
# 2000..2199. Only alarm 1 is used: daily (hh:mm:ss match) or one-shot
# (date + hh:mm:ss match). A date match recurs on that day of every month,
# so callers disable or re-program the alarm once it has fired.
from hal import civil

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

ADDR = const(0x68)
_TIME = const(0x00)
_ALARM1 = const(0x07)
_CTRL = const(0x0E)
_STAT = const(0x0F)
_INTCN = const(0x04)
_A1IE = const(0x01)
_A1F = const(0x01)
_OSF = const(0x80)
_MASK = const(0x80)  # A1Mx bit: field does not take part in the match
_DY = const(0x40)


def _bcd(v):
    return ((v // 10) << 4) | (v % 10)


def _unbcd(b):
    return (b >> 4) * 10 + (b & 0x0F)


class DS3231:
    def __init__(self, i2c, addr=ADDR):
        self._i2c = i2c
        self._addr = addr
        self._buf7 = bytearray(7)
        self._buf4 = bytearray(4)
        self._buf1 = bytearray(1)

    def _read1(self, reg):
        self._i2c.readfrom_mem_into(self._addr, reg, self._buf1)
        return self._buf1[0]

    def _write1(self, reg, value):
        self._buf1[0] = value
        self._i2c.writeto_mem(self._addr, reg, self._buf1)

    # ---- time ----
    def datetime(self):
        """(year, month, day, hour, minute, second, weekday 1=Mon..7=Sun)."""
        b = self._buf7
        self._i2c.readfrom_mem_into(self._addr, _TIME, b)
        if b[2] & 0x40:  # 12 h mode, set by someone else
            h = _unbcd(b[2] & 0x1F) % 12 + (12 if b[2] & 0x20 else 0)
        else:
            h = _unbcd(b[2] & 0x3F)
        year = 2000 + _unbcd(b[6]) + (100 if b[5] & 0x80 else 0)
        return (year, _unbcd(b[5] & 0x1F), _unbcd(b[4] & 0x3F), h,
                _unbcd(b[1] & 0x7F), _unbcd(b[0] & 0x7F), b[3] & 0x07)

    def time(self):
        """The chip's time as Unix seconds."""
        y, mo, d, h, mi, s, _ = self.datetime()
        return civil.to_epoch(y, mo, d, h, mi, s)

    def set_time(self, secs):
        """Set the chip from Unix seconds; also clears the lost-power flag."""
        y, mo, d, h, mi, s, wd = civil.from_epoch(int(secs))
        if not 2000 <= y <= 2199:
            raise ValueError("DS3231 holds years 2000..2199")
        b = self._buf7
        b[0] = _bcd(s)
        b[1] = _bcd(mi)
        b[2] = _bcd(h)  # bit 6 clear: 24 h mode
        b[3] = wd
        b[4] = _bcd(d)
        b[5] = _bcd(mo) | (0x80 if y >= 2100 else 0)
        b[6] = _bcd(y % 100)
        self._i2c.writeto_mem(self._addr, _TIME, b)
        self._write1(_STAT, self._read1(_STAT) & ~_OSF)

    def lost_power(self):
        """True when the oscillator stopped since the time was last set."""
        return bool(self._read1(_STAT) & _OSF)

    # ---- alarm 1 ----
    def set_alarm_daily(self, hour, minute, second=0):
        """Alarm 1 every day at hour:minute:second (A1M4 set: date ignored)."""
        b = self._buf4
        b[0] = _bcd(second)
        b[1] = _bcd(minute)
        b[2] = _bcd(hour)
        b[3] = _MASK | 1
        self._i2c.writeto_mem(self._addr, _ALARM1, b)

    def set_alarm_once(self, secs):
        """Alarm 1 at the date + time of Unix seconds `secs` (DT match)."""
        _, _, d, h, mi, s, _ = civil.from_epoch(int(secs))
        b = self._buf4
        b[0] = _bcd(s)
        b[1] = _bcd(mi)
        b[2] = _bcd(h)
        b[3] = _bcd(d)  # DY/DT = 0: day of month
        self._i2c.writeto_mem(self._addr, _ALARM1, b)

    def alarm(self):
        """(kind, day, hour, minute, second); kind 'daily' | 'date' | 'weekday' | 'other'."""
        b = self._buf4
        self._i2c.readfrom_mem_into(self._addr, _ALARM1, b)
        masks = (b[0] >> 7) | ((b[1] >> 6) & 2) | ((b[2] >> 5) & 4) | ((b[3] >> 4) & 8)
        if masks == 8:
            kind = "daily"
        elif masks == 0:
            kind = "weekday" if b[3] & _DY else "date"
        else:
            kind = "other"
        day = b[3] & 0x0F if b[3] & _DY else _unbcd(b[3] & 0x3F)
        return (kind, day, _unbcd(b[2] & 0x3F), _unbcd(b[1] & 0x7F), _unbcd(b[0] & 0x7F))

    def enable_alarm(self, on=True):
        """INT pin follows alarm 1 (INTCN = 1, A1IE = on)."""
        c = self._read1(_CTRL) | _INTCN
        self._write1(_CTRL, (c | _A1IE) if on else (c & ~_A1IE))

    def alarm_enabled(self):
        c = self._read1(_CTRL)
        return bool(c & _INTCN) and bool(c & _A1IE)

    def alarm_fired(self):
        """A1F: alarm 1 matched since the flag was last cleared."""
        return bool(self._read1(_STAT) & _A1F)

    def clear_alarm(self):
        """Clear A1F, which releases the INT pin."""
        self._write1(_STAT, self._read1(_STAT) & ~_A1F)
