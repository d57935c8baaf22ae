# Calendar arithmetic in plain integers (proleptic Gregorian, UTC).
#
# MicroPython ports disagree on the epoch of time.mktime/gmtime (1970 on the
# unix port, 2000 on most boards), so everything that stores or compares
# wall time here uses Unix seconds computed by these functions instead.
# Valid for years 1970..2199 (the DS3231 covers 2000..2199).


def days_from_civil(y, m, d):
    """Days since 1970-01-01 of the date y-m-d."""
    if m <= 2:
        y -= 1
    era = y // 400
    yoe = y - era * 400
    mp = (m + 9) % 12  # March = 0
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(z):
    """(year, month, day) of the day number z (days since 1970-01-01)."""
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    if m <= 2:
        y += 1
    return y, m, d


def weekday(days):
    """ISO weekday of a day number: Monday = 1 .. Sunday = 7."""
    return (days + 3) % 7 + 1  # 1970-01-01 was a Thursday


def to_epoch(y, mo, d, h, mi, s):
    return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s


def from_epoch(secs):
    """(year, month, day, hour, minute, second, iso_weekday) of Unix secs."""
    days = secs // 86400
    rem = secs - days * 86400
    y, mo, d = civil_from_days(days)
    return (y, mo, d, rem // 3600, (rem // 60) % 60, rem % 60, weekday(days))


def days_in_month(y, m):
    if m == 2:
        leap = (y % 4 == 0 and y % 100 != 0) or y % 400 == 0
        return 29 if leap else 28
    return 30 if m in (4, 6, 9, 11) else 31
