# Register model of the Everest ES8311 codec on the host I2C bus (7-bit
# address 0x18 with CE low). Reset values: the ES8311 datasheet's register
# map as far as the registers below go (not re-read here: no datasheet in
# the mirrors; docs/hardware.md). The chip ID (0xFD 0x83, 0xFE 0x11) is what
# esp_codec_dev's users probe.
#
# The simulated speaker plays only when dac_fault() is None: CSM on, I2S
# slave, clocks on from MCLK, analog up, DAC powered, 16-bit serial input
# unmuted, the clock dividers esp_codec_dev sets for MCLK = 256 fs at the
# rate I2S runs, the DAC not muted and its volume above the floor. The mic
# (when the ES8311's ADC is the board's mic) likewise with adc_fault().
from hal.host.reg_model import RegModel

ADDR = 0x18
_RESET = {0x00: 0x1F, 0x01: 0x00, 0x02: 0x00, 0x03: 0x10, 0x04: 0x10, 0x05: 0x00,
          0x06: 0x03, 0x07: 0x00, 0x08: 0xFF, 0x09: 0x00, 0x0A: 0x00, 0x0B: 0x00,
          0x0C: 0x20, 0x0D: 0xFC, 0x0E: 0x6A, 0x0F: 0x00, 0x10: 0x13, 0x11: 0x7C,
          0x12: 0x02, 0x13: 0x40, 0x14: 0x10, 0x15: 0x00, 0x16: 0x04, 0x17: 0x00,
          0x1B: 0x0C, 0x1C: 0x4C, 0x31: 0x00, 0x32: 0x00, 0x37: 0x08, 0x44: 0x00,
          0x45: 0x00, 0xFD: 0x83, 0xFE: 0x11, 0xFF: 0x00}
_READ_ONLY = (0xFD, 0xFE, 0xFF)
# esp_codec_dev's clock coefficient rows (device/es8311/es8311.c,
# coeff_div[]) for MCLK = 256 fs, keyed by (MCLK Hz, rate): pre_div,
# pre_multi, adc_div, dac_div, fs_mode, lrck_h, lrck_l, bclk_div, adc_osr,
# dac_osr. At 256 fs every row divides by 1 and multiplies by 1; only the
# oversampling changes with the rate.
_ROWS = {(2048000, 8000): (1, 1, 1, 1, 0, 0x00, 0xFF, 4, 0x10, 0x20),
         (2822400, 11025): (1, 1, 1, 1, 0, 0x00, 0xFF, 4, 0x10, 0x20),
         (3072000, 12000): (1, 1, 1, 1, 0, 0x00, 0xFF, 4, 0x10, 0x20),
         (4096000, 16000): (1, 1, 1, 1, 0, 0x00, 0xFF, 4, 0x10, 0x20),
         (5644800, 22050): (1, 1, 1, 1, 0, 0x00, 0xFF, 4, 0x10, 0x10),
         (6144000, 24000): (1, 1, 1, 1, 0, 0x00, 0xFF, 4, 0x10, 0x10),
         (8192000, 32000): (1, 1, 1, 1, 0, 0x00, 0xFF, 4, 0x10, 0x10),
         (11289600, 44100): (1, 1, 1, 1, 0, 0x00, 0xFF, 4, 0x10, 0x10),
         (12288000, 48000): (1, 1, 1, 1, 0, 0x00, 0xFF, 4, 0x10, 0x10)}
_MULTI_CODE = {1: 0, 2: 1, 4: 2, 8: 3}   # REG02 bits 4:3, as es8311.c encodes pre_multi


class ES8311Model(RegModel):
    NAME = "es8311"
    RESET = _RESET
    KNOWN = tuple(range(0x00, 0x1D)) + tuple(range(0x31, 0x38)) + (0x44, 0x45)

    def store(self, reg, value):
        if reg not in _READ_ONLY:
            self.regs[reg] = value

    def _clocked(self):
        if self.clock is not None and not self.clock():
            return "no MCLK (I2S not running)"
        if self.refused:
            return "%d register writes refused while MCLK was off (first REG%02X)" % (
                len(self.refused), self.refused[0][0])
        return None

    def _common(self, rate):
        r = self.regs
        if not r[0x00] & 0x80:
            return "state machine off (REG00=0x%02x)" % r[0x00]
        if r[0x00] & 0x40:
            return "set as I2S master (REG00=0x%02x): both ends would drive BCLK" % r[0x00]
        if r[0x01] & 0xBF != 0x3F:
            return "clocks off or not from MCLK (REG01=0x%02x)" % r[0x01]
        if r[0x0D] & 0xFC:
            return "analog powered down (REG0D=0x%02x)" % r[0x0D]
        return self._dividers(rate)

    def _dividers(self, rate):
        """The clock registers against esp_codec_dev's row for the MCLK
        that runs and the rate: a wrong pre-divider, multiplier or
        oversampling makes the chip run at another rate (noise, not sound)."""
        r = self.regs
        mclk = self.clock() if self.clock is not None else 256 * rate
        row = _ROWS.get((mclk, rate))
        if row is None:
            return "no clock divider row for MCLK %d Hz at %d Hz" % (mclk, rate)
        pre_div, multi, adc_div, dac_div, fs_mode, lrck_h, lrck_l, bclk_div, adc_osr, dac_osr = row
        want = ((0x02, 0xF8, ((pre_div - 1) << 5) | (_MULTI_CODE[multi] << 3)),
                (0x05, 0xFF, ((adc_div - 1) << 4) | (dac_div - 1)),
                (0x03, 0x7F, (fs_mode << 6) | adc_osr), (0x04, 0x7F, dac_osr),
                (0x06, 0x1F, bclk_div - 1), (0x07, 0x3F, lrck_h), (0x08, 0xFF, lrck_l))
        for reg, mask, value in want:
            if r[reg] & mask != value:
                return "clock dividers not esp_codec_dev's row for MCLK %d Hz at %d Hz (REG%02X=0x%02x)" % (
                    mclk, rate, reg, r[reg])
        return None

    def dac_fault(self, rate):
        """None when the DAC path plays at `rate`, else why it is silent."""
        r = self.regs
        why = self._clocked() or self._common(rate)
        if why:
            return why
        if r[0x12] & 0x02:
            return "DAC powered down (REG12=0x%02x)" % r[0x12]
        if r[0x09] & 0x40:
            return "serial input muted (REG09=0x%02x)" % r[0x09]
        if r[0x09] & 0x1C != 0x0C:
            return "serial input not 16-bit (REG09=0x%02x)" % r[0x09]
        if r[0x31] & 0x60:
            return "DAC muted (REG31=0x%02x)" % r[0x31]
        if r[0x32] == 0:
            return "DAC volume at its floor (REG32=0x00)"
        return None

    def adc_fault(self, rate):
        r = self.regs
        why = self._clocked() or self._common(rate)
        if why:
            return why
        if r[0x0E] & 0xFD:
            return "ADC or PGA powered down (REG0E=0x%02x)" % r[0x0E]
        if r[0x0A] & 0x40:
            return "serial output muted (REG0A=0x%02x)" % r[0x0A]
        if r[0x0A] & 0x1C != 0x0C:
            return "serial output not 16-bit (REG0A=0x%02x)" % r[0x0A]
        if r[0x17] == 0:
            return "ADC volume at its floor (REG17=0x00)"
        return None

    def dac_percent(self):
        """The DAC's gain as a percentage of full scale: 0.5 dB per step
        from -95.5 dB at 0x00 (0 dB at 0xBF), capped at 100."""
        db = self.regs[0x32] / 2 - 95.5
        return max(0, min(100, int(100 * 10 ** (db / 20) + 0.5)))

    def powered_down(self):
        r = self.regs
        return r[0x12] & 0x02 and r[0x0D] == 0xFC and not r[0x00] & 0x80
