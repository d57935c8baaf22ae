# Register model of the Maxim DS3231 RTC, as seen over I2C (address 0x68).
#
# Modelled: time/calendar registers 0x00-0x06 in BCD (12/24 h, century bit),
# alarm 1 (0x07-0x0A, A1M1..A1M4, DY/DT) and alarm 2 (0x0B-0x0D, A2M2..A2M4),
# control 0x0E (INTCN, A1IE, A2IE), status 0x0F (OSF, EN32kHz, A1F, A2F that
# software can only clear), aging 0x10, temperature 0x11-0x12 (fixed 25.00 C,
# read-only), the register pointer with wrap-around after 0x12, and the
# open-drain active-low INT pin (low while an enabled alarm flag is set and
# INTCN = 1). The chip counts whole seconds of *simulated* time, so clock
# warps advance it, and it keeps counting while the simulated board is off
# (load() with the seconds that passed).
# Not modelled: the square-wave output when INTCN = 0 (INT stays high),
# the 32 kHz pin, temperature conversion, aging's effect on the rate.
from hal import civil

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

ADDR = const(0x68)
NREGS = const(0x13)
_CTRL = const(0x0E)
_STAT = const(0x0F)
_INTCN = const(0x04)
_A2IE = const(0x02)
_A1IE = const(0x01)
_OSF = const(0x80)
_A2F = const(0x02)
_A1F = const(0x01)
_EPOCH2000 = const(946684800)
_MAX_SCAN_DAYS = const(4000)


def _bcd(v):
    return ((v // 10) << 4) | (v % 10)


def _unbcd(b):
    return (b >> 4) * 10 + (b & 0x0F)


def _hour(b):
    """Decode an hour register (24 h, or 12 h when bit 6 is set)."""
    if b & 0x40:
        h = _unbcd(b & 0x1F) % 12
        return h + 12 if b & 0x20 else h
    return _unbcd(b & 0x3F)


class DS3231Model:
    def __init__(self, clock):
        self._clock = clock
        self.regs = bytearray(NREGS)
        self._ptr = 0
        self._listeners = []
        self.on_write = None  # called after every register write (persistence)
        self.regs[_CTRL] = 0x1C  # power-on: RS2 RS1 INTCN
        self.regs[_STAT] = _OSF | 0x08  # oscillator stopped flag, EN32kHz
        self._dow_offset = 0
        self._anchor(_EPOCH2000)
        self.regs[3] = 1
        self._dow_offset = (1 - civil.weekday(_EPOCH2000 // 86400)) % 7
        self._checked = _EPOCH2000
        self._int_low = False
        self._refresh_time_regs(_EPOCH2000)

    # ---- time keeping ----
    def _anchor(self, chip_secs):
        self._anchor_chip = chip_secs
        self._anchor_ms = self._clock.ticks_ms()

    def now(self):
        """The chip's current calendar time as Unix seconds."""
        return self._anchor_chip + (self._clock.ticks_ms() - self._anchor_ms) // 1000

    def _refresh_time_regs(self, t):
        y, mo, d, h, mi, s, wd = civil.from_epoch(t)
        r = self.regs
        r[0] = _bcd(s)
        r[1] = _bcd(mi)
        if r[2] & 0x40:  # keep the 12 h mode the software chose
            h12 = h % 12 or 12
            r[2] = 0x40 | (0x20 if h >= 12 else 0) | _bcd(h12)
        else:
            r[2] = _bcd(h)
        r[3] = (wd - 1 + self._dow_offset) % 7 + 1
        r[4] = _bcd(d)
        r[5] = _bcd(mo) | (0x80 if y >= 2100 else 0)
        r[6] = _bcd(y % 100)

    def _regs_time(self):
        r = self.regs
        y = 2000 + _unbcd(r[6]) + (100 if r[5] & 0x80 else 0)
        mo = min(12, max(1, _unbcd(r[5] & 0x1F)))
        d = min(civil.days_in_month(y, mo), max(1, _unbcd(r[4] & 0x3F)))
        return civil.to_epoch(y, mo, d, min(23, _hour(r[2])),
                              min(59, _unbcd(r[1] & 0x7F)), min(59, _unbcd(r[0] & 0x7F)))

    def update(self):
        """Bring registers and alarm flags up to the current simulated second."""
        t = self.now()
        if t > self._checked:
            st = self.regs[_STAT]
            if self._alarm_due(1, self._checked, t):
                st |= _A1F
            if self._alarm_due(2, self._checked, t):
                st |= _A2F
            self.regs[_STAT] = st
        self._checked = t
        self._refresh_time_regs(t)
        self._update_int()

    # ---- alarms ----
    def _alarm_fields(self, n):
        """(second, minute, hour, date, dow) with None for masked fields."""
        r = self.regs
        if n == 1:
            b = r[7:11]
            sec = None if b[0] & 0x80 else _unbcd(b[0] & 0x7F)
            b = b[1:]
        else:
            b = r[0x0B:0x0E]
            sec = 0
        mi = None if b[0] & 0x80 else _unbcd(b[0] & 0x7F)
        hr = None if b[1] & 0x80 else _hour(b[1] & 0x7F)
        date = dow = None
        if not b[2] & 0x80:
            if b[2] & 0x40:
                dow = b[2] & 0x0F
            else:
                date = _unbcd(b[2] & 0x3F)
        if n == 2 and mi is None and hr is None and date is None and dow is None:
            return 0, None, None, None, None  # A2 all masked: every minute at :00
        return sec, mi, hr, date, dow

    def _first_in_day(self, lo, sec, mi, hr):
        """First second-of-day >= lo matching the fields, or None."""
        for h in (range(24) if hr is None else (hr,)):
            if h * 3600 + 3599 < lo:
                continue
            for m in (range(60) if mi is None else (mi,)):
                base = h * 3600 + m * 60
                if base + 59 < lo:
                    continue
                if sec is None:
                    return max(lo, base)
                if base + sec >= lo:
                    return base + sec
        return None

    def _alarm_due(self, n, t0, t1):
        """Whether some second in (t0, t1] matches alarm n."""
        sec, mi, hr, date, dow = self._alarm_fields(n)
        start = t0 + 1
        day = start // 86400
        last = t1 // 86400
        if last - day > _MAX_SCAN_DAYS:
            day = last - _MAX_SCAN_DAYS
            start = day * 86400
        while day <= last:
            ok = True
            if date is not None:
                ok = civil.civil_from_days(day)[2] == date
            if dow is not None:
                ok = (civil.weekday(day) - 1 + self._dow_offset) % 7 + 1 == dow
            if ok:
                lo = start - day * 86400 if day == start // 86400 else 0
                s = self._first_in_day(max(0, lo), sec, mi, hr)
                if s is not None:
                    return day * 86400 + s <= t1
            day += 1
        return False

    # ---- INT pin ----
    def _update_int(self):
        st, ctrl = self.regs[_STAT], self.regs[_CTRL]
        low = bool(ctrl & _INTCN) and bool(
            (st & _A1F and ctrl & _A1IE) or (st & _A2F and ctrl & _A2IE))
        if low != self._int_low:
            self._int_low = low
            for cb in self._listeners:
                cb(0 if low else 1)

    def int_level(self):
        """INT/SQW pin level: 0 when asserted (open drain, active low)."""
        self.update()
        return 0 if self._int_low else 1

    def on_int_change(self, cb):
        self._listeners.append(cb)

    def seconds_to_next_alarm(self, horizon=86400 * 32):
        """Simulated seconds until an enabled alarm fires, or None (for the sim runner)."""
        ctrl = self.regs[_CTRL]
        if not ctrl & _INTCN:
            return None
        t = self.now()
        best = None
        for n, ie in ((1, _A1IE), (2, _A2IE)):
            if not ctrl & ie:
                continue
            lo, hi = t, t + horizon
            if not self._alarm_due(n, lo, hi):
                continue
            while hi - lo > 1:  # bisect the first due second
                mid = (lo + hi) // 2
                if self._alarm_due(n, t, mid):
                    hi = mid
                else:
                    lo = mid
            if best is None or hi - t < best:
                best = hi - t
        return best

    # ---- I2C side ----
    def write(self, data):
        """An I2C write transaction: pointer byte, then register bytes."""
        if not data:
            return
        self.update()
        self._ptr = data[0] % NREGS
        touched_time = False
        for b in data[1:]:
            p = self._ptr
            if p <= 6:
                touched_time = True
                self.regs[p] = b
            elif p == _STAT:
                # OSF, A2F, A1F can only be cleared; EN32kHz is plain r/w
                self.regs[p] = (self.regs[p] & b & 0x83) | (b & 0x08)
            elif p in (0x11, 0x12):
                pass  # temperature is read-only
            else:
                self.regs[p] = b
            self._ptr = (p + 1) % NREGS
        if touched_time:
            wd = self.regs[3] & 0x07 or 1
            t = self._regs_time()
            self._dow_offset = (wd - civil.weekday(t // 86400)) % 7
            self._anchor(t)
            self._checked = t
            self._refresh_time_regs(t)
        self._update_int()
        if self.on_write is not None:
            self.on_write()

    def read(self, n):
        """An I2C read transaction of n bytes from the register pointer."""
        self.update()
        self.regs[0x11] = 25
        self.regs[0x12] = 0
        out = bytearray(n)
        for i in range(n):
            out[i] = self.regs[self._ptr]
            self._ptr = (self._ptr + 1) % NREGS
        return out

    # ---- battery-backed persistence ----
    def to_state(self):
        self.update()
        return {"regs": list(self.regs), "chip": self.now(), "dow_offset": self._dow_offset}

    def load(self, state, off_seconds=0):
        """Restore a saved chip; `off_seconds` of time passed while unpowered."""
        self.regs[:] = bytes(state["regs"])
        self._dow_offset = state.get("dow_offset", 0)
        self._checked = state["chip"]
        self._anchor(state["chip"] + max(0, int(off_seconds)))
        self.update()
