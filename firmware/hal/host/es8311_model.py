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
# DAC OSR at 256 fs by rate class (esp_codec_dev's coefficient table)
_DAC_OSR = {8000: 0x20, 16000: 0x20, 24000: 0x10, 32000: 0x10, 44100: 0x10, 48000: 0x10}


class ES8311Model(RegModel):
    NAME = "es8311"
    RESET = _RESET
    KNOWN = tuple(range(0x00, 0x1D)) + tuple(range(0x31, 0x38)) + (0x44, 0x45)

    def store(self, reg, value):
        if reg not in _READ_ONLY:
            self.regs[reg] = value

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
        multi = 1 if rate == 8000 else 0
        want = ((0x02, 0xF8, multi << 3), (0x03, 0x7F, 0x10), (0x05, 0xFF, 0x00),
                (0x06, 0x1F, 0x03), (0x07, 0x3F, 0x00), (0x08, 0xFF, 0xFF))
        for reg, mask, value in want:
            if r[reg] & mask != value:
                return "clock dividers not set for %d Hz at 256 fs (REG%02X=0x%02x)" % (rate, reg, r[reg])
        return None

    def dac_fault(self, rate):
        """None when the DAC path plays at `rate`, else why it is silent."""
        r = self.regs
        why = self._common(rate)
        if why:
            return why
        if r[0x04] & 0x7F != _DAC_OSR.get(rate, 0x10):
            return "DAC oversampling not set for %d Hz (REG04=0x%02x)" % (rate, r[0x04])
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
        why = self._common(rate)
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
