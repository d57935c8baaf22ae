# Register model of the Everest ES7210 4-channel ADC on the host I2C bus
# (7-bit 0x40..0x43 by its AD pins). Reset values are those of a chip in
# its lowest-power state, the state esp_codec_dev's stop sequence leaves
# (the datasheet was not at hand here: docs/hardware.md). The simulated
# mic yields audio only when mic_fault() is None: state machine on, I2S
# slave, ADC not powered down, analog up, the mic's channel clocked and
# powered with its PGA on, 16-bit Philips I2S, TDM when the board reads
# TDM, and not muted.
from hal.host.reg_model import RegModel

_RESET = {0x00: 0x32, 0x01: 0x7F, 0x02: 0x02, 0x03: 0x04, 0x04: 0x01, 0x05: 0x00,
          0x06: 0x07, 0x07: 0x20, 0x08: 0x10, 0x09: 0x40, 0x0A: 0x40, 0x11: 0x00,
          0x12: 0x00, 0x13: 0x00, 0x14: 0x00, 0x15: 0x00, 0x20: 0x00, 0x21: 0x00,
          0x22: 0x00, 0x23: 0x00, 0x40: 0xC0, 0x41: 0x00, 0x42: 0x00, 0x43: 0x00,
          0x44: 0x00, 0x45: 0x00, 0x46: 0x00, 0x47: 0xFF, 0x48: 0xFF, 0x49: 0xFF,
          0x4A: 0xFF, 0x4B: 0xFF, 0x4C: 0xFF}


SLOT_MIC = (0, 2, 1, 3)   # TDM slot -> physical mic index (MIC1 = 0)
_PGA_DB = (0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 34.5, 36, 37.5, 37.5)


class ES7210Model(RegModel):
    NAME = "es7210"
    RESET = _RESET

    def gain_db(self, mic):
        """The PGA gain of physical mic `mic` (0..3), in dB."""
        return _PGA_DB[self.regs[0x43 + mic] & 0x0F]

    def slot_level(self, slot, input_dbfs):
        """(level in dBFS the slot carries, clipped) for a signal of
        input_dbfs at the mic's input (relative to the ADC's full scale)."""
        out = input_dbfs + self.gain_db(SLOT_MIC[slot])
        return (min(out, 0.0), out > 0)

    def slot_fault(self, slot, tdm=True):
        """mic_fault() for what TDM slot `slot` carries."""
        return self.mic_fault(SLOT_MIC[slot] if tdm else slot, tdm)

    def mic_fault(self, mic=0, tdm=True):
        """None when microphone `mic` (0..3) reaches I2S, else why not."""
        r = self.regs
        if self.clock is not None and not self.clock():
            return "no MCLK (I2S not running)"
        if self.refused:
            return "%d register writes refused while MCLK was off (first REG%02X)" % (
                len(self.refused), self.refused[0][0])
        if r[0x00] != 0x41:
            return "not started (REG00=0x%02x)" % r[0x00]
        if r[0x08] & 0x01:
            return "set as I2S master (REG08=0x%02x)" % r[0x08]
        if r[0x06] & 0x07:
            return "powered down (REG06=0x%02x)" % r[0x06]
        if r[0x40] & 0x80:
            return "analog powered down (REG40=0x%02x)" % r[0x40]
        if r[0x01] & (0x0B if mic < 2 else 0x15):
            return "channel clock off (REG01=0x%02x)" % r[0x01]
        if r[0x4B if mic < 2 else 0x4C]:
            return "mic %d bias/ADC/PGA powered down (REG%02X=0x%02x)" % (
                mic + 1, 0x4B if mic < 2 else 0x4C, r[0x4B if mic < 2 else 0x4C])
        if r[0x47 + mic] & 0xF7:
            return "mic %d powered down (REG%02X=0x%02x)" % (mic + 1, 0x47 + mic, r[0x47 + mic])
        if not r[0x43 + mic] & 0x10:
            return "mic %d PGA off (REG%02X=0x%02x)" % (mic + 1, 0x43 + mic, r[0x43 + mic])
        if r[0x11] & 0xE3 != 0x60:
            return "not 16-bit Philips I2S (REG11=0x%02x)" % r[0x11]
        if tdm and r[0x12] != 0x02:
            return "TDM off (REG12=0x%02x)" % r[0x12]
        if (r[0x14] | r[0x15]) & 0x03:
            return "muted (REG14=0x%02x REG15=0x%02x)" % (r[0x14], r[0x15])
        return None

    def powered_down(self):
        return bool(self.regs[0x06] & 0x07 and self.regs[0x40] & 0x80)
