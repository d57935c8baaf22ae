# Model of the ESP32-S3's I2S controller as the audio engine (firmware/
# cmodules/xzaudio/esp32/xz_i2s.c) configures it, for the host board's
# codec models: whether MCLK runs (the codecs' clock), at what frequency,
# and whether the mic side's slots line up with the clocks on the wire.
#
# The rules, from ESP-IDF v5.5.1 components/esp_driver_i2s:
# - On one controller with TX and RX made by one i2s_new_channel() call
#   (full duplex), BCLK and WS are shared and RX is forced to be a slave
#   of TX (i2s_tdm.c and i2s_std.c, "Force to set rx as slave"): the frame
#   on the wire is TX's, whatever width RX was configured with.
# - A frame is slots x slot width BCLK periods; RX counts its slots from
#   the WS edge, so an RX frame wider or narrower than TX's reads slots
#   that start at the wrong BCLK: what it hands over is not the channel it
#   names (the mic and the echo reference come out wrong).
# - MCLK = mclk_multiple (256 here) x the rate while a channel is enabled;
#   it stops when the engine stops.
# The engine's wire format (WIRE below) is the one xz_i2s.h defines; a host
# test reads that header and compares, so the model cannot drift from C.

# What xz_i2s.c puts on the wire (xz_i2s.h: XZ_I2S_TX_DATA_BITS,
# XZ_I2S_TX_SLOT_BITS, XZ_I2S_RX_SLOT_BITS). TX is standard Philips with
# two slots (left/right).
WIRE = {"tx_data_bits": 16, "tx_slot_bits": 32, "rx_slot_bits": 16}
MCLK_MULTIPLE = 256


class HostI2S:
    def __init__(self, audio, wire=None):
        self.mode = audio["mode"]
        self.rate = audio["rate"]
        self.tdm_slots = audio.get("tdm_slots", 2)
        self.wire = wire or WIRE
        self.running = False
        self.starts = 0

    def start(self, rate=None):
        """xzaudio.start(): channels made and enabled, MCLK out."""
        if rate is not None:
            self.rate = rate
        self.running = True
        self.starts += 1

    def stop(self):
        self.running = False

    def mclk_hz(self):
        """MCLK on the codecs' pin, 0 while it does not run (SIMPLEX has none)."""
        if not self.running or self.mode == "simplex":
            return 0
        return MCLK_MULTIPLE * self.rate

    def tx_frame_bclk(self):
        return 2 * self.wire["tx_slot_bits"]

    def rx_frame_bclk(self):
        slots = self.tdm_slots if self.mode == "tdm" else 2
        bits = self.wire["rx_slot_bits"] if self.mode == "tdm" else self.wire["tx_slot_bits"]
        return slots * bits

    def rx_fault(self):
        """None when the RX slots line up with the frame TX clocks out, else why not."""
        if not self.running:
            return "I2S not started (no BCLK/WS)"
        if self.mode == "simplex":
            return None   # two controllers, each its own master
        tx, rx = self.tx_frame_bclk(), self.rx_frame_bclk()
        if tx != rx:
            return ("RX frame is %d BCLK but TX, the shared controller's clock master, "
                    "sends %d per WS period: slots misaligned" % (rx, tx))
        return None
