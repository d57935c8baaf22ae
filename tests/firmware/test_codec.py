# Codec bring-up against the host's register models (hal/host/*_model.py):
# each board profile boots with its chips set up, the speaker and mic stay
# silent until the registers say their path is on, a wrong address stops
# the boot naming chip, address and bus, and standby powers the chips down.
import t
import hal.host
from hal import profile as profiles
from hal.host.board import profile_path
from hal.host.i2c import I2CBus
from hal.host.frontend import HostFrontend
import asyncio

BOARDS = ("sening", "esp32-s3-box-3", "bread-compact")


def _profile(name):
    return profiles.load(profile_path(name))


def _board(name, **kw):
    exits = []
    b = hal.host.board(t.tmpdir("codec"), exit_fn=exits.append, profile=name, **kw)
    return b, exits


def _frontend(name, clocked=True):
    """The profile's chips on a bus; clocked: the engine's I2S runs (MCLK),
    as the board starts it before the codecs."""
    fe = HostFrontend(I2CBus(), _profile(name))
    if clocked:
        fe.start_i2s()
    return fe


async def test_every_profile_boots_with_its_paths_on_and_no_unknown_register_written():
    for name in BOARDS:
        b, _ = _board(name)
        fe = b.frontend
        t.eq(b.board_name, name, "board")
        if fe.amp_model is not None or fe.amp_pin is not None:
            t.eq(fe.speaker_fault(), "amplifier off", name + ": off until something plays (hal/amp.py)")
        b.speaker.begin_reply()
        await b.speaker.write_frame(b"\xf8\xff\xfe")
        t.eq(fe.speaker_fault(), None, name + " speaker")
        t.eq(fe.mic_fault(), None, name + " mic")
        for chip, model in fe.models.items():
            t.eq(model.unknown, [], "%s %s unknown writes" % (name, chip))
            t.eq(model.refused, [], "%s %s writes before MCLK ran" % (name, chip))
            t.true(model.writes > 0, "%s %s was written" % (name, chip))
        t.eq(fe.amp_unclocked(), 0, name + ": amplifier switched on with no I2S clock")


def test_codec_boards_are_silent_before_bring_up_and_each_step_matters():
    fe = _frontend("sening")
    t.true("state machine off" in fe.speaker_fault(), fe.speaker_fault())
    t.true("not started" in fe.mic_fault(), fe.mic_fault())
    d = fe.driver
    d.amp.open()
    d.dac.open()
    d.adc.open()
    d.dac.set_rate(24000)
    d.adc.set_rate(24000)
    t.true("powered down" in fe.speaker_fault(), fe.speaker_fault())
    d.dac.enable(True)
    t.true("volume at its floor" in fe.speaker_fault(), fe.speaker_fault())
    d.dac.set_volume(60)
    t.eq(fe.speaker_fault(), "amplifier off")
    d.amp.enable(True)
    t.eq(fe.speaker_fault(), None, "speaker after the whole sequence")
    d.dac.mute(True)
    t.true("muted" in fe.speaker_fault(), "mute reaches the register")
    d.dac.mute(False)
    t.true(fe.mic_fault() is not None, "ES7210 not enabled yet")
    d.adc.enable(True)
    t.eq(fe.mic_fault(), None, "mic after enable")


def test_a_rate_the_dividers_were_not_set_for_is_silent():
    fe = _frontend("sening", clocked=False)
    fe.start_i2s(24000)
    fe.open()
    fe.driver.set_volume(60)
    fe.driver.output(True)
    t.eq(fe.speaker_fault(), None, "24 kHz as set up")
    fe.rate = 16000   # I2S re-clocked to 16 kHz, the ES8311 still set up for 24 kHz
    fe.i2s.rate = 16000
    t.true("16000 Hz" in fe.speaker_fault(), fe.speaker_fault())


def test_every_rate_plays_with_esp_codec_dev_s_divider_row():
    # The ES8311 model checks REG02..08 against es8311.c's coefficient row
    # for MCLK = 256 fs at the rate (8 kHz: pre-multiplier x1 like the rest).
    for rate in (8000, 16000, 24000, 32000, 44100, 48000):
        p = _profile("sening")
        p["audio"]["rate"] = p["audio"]["mic_rate"] = rate
        fe = HostFrontend(I2CBus(), p)
        fe.start_i2s()
        fe.open()
        fe.set_volume(60)
        fe.output(True)
        t.eq(fe.speaker_fault(), None, "%d Hz" % rate)


def test_codec_registers_written_before_mclk_are_refused_and_leave_the_board_silent():
    # The rule the board's order is checked by: I2S (MCLK) first, codecs next.
    fe = _frontend("sening", clocked=False)
    fe.open()
    fe.start_i2s()
    fe.set_volume(60)
    fe.output(True)
    t.true(len(fe.models["es8311"].refused) > 0, "es8311 refused its set-up")
    t.true("refused while MCLK was off" in fe.speaker_fault(), fe.speaker_fault())
    t.true("refused while MCLK was off" in fe.mic_fault(), fe.mic_fault())


def test_the_amplifier_comes_on_after_the_output_path_and_goes_off_first():
    for name in ("sening", "esp32-s3-box-3"):
        fe = _frontend(name)
        fe.open()
        t.eq(fe.amp_on(), False, name + ": codecs up, output not open yet: amplifier off")
        fe.output(True)
        t.eq(fe.amp_on(), True, name + ": output open")
        t.eq(fe.amp_unclocked(), 0, name)
    fe = _frontend("sening", clocked=False)
    fe.driver.amp.open()
    fe.output(True)    # before the engine: nothing clocks the DAC
    t.eq(fe.amp_unclocked(), 1, "recorded")


def test_volume_register_sets_the_simulated_level():
    fe = _frontend("esp32-s3-box-3")
    fe.open()
    fe.set_volume(100)
    loud = fe.speaker_percent()
    fe.set_volume(40)
    quiet = fe.speaker_percent()
    t.eq(fe.dac.regs[0x32], 98 + 40, "esp_codec_dev's curve")
    t.true(loud == 100 and 0 < quiet < 10, "levels %d %d" % (loud, quiet))


def test_box3_amplifier_is_its_gpio_and_the_pca9557_drives_what_stock_drives():
    fe = _frontend("esp32-s3-box-3")
    t.eq(fe.amp_pin.level, None, "undriven before boot")
    fe.open()
    fe.output(True)
    t.eq((fe.amp_pin.gpio, fe.amp_pin.level), (46, 1), "PA enable")
    fe = _frontend("sening")
    fe.open()
    fe.output(True)
    # lichuang_dev_board.cc: outputs 0..2 (config 0xF8), LCD CS (0) high,
    # amplifier (1), camera power-down (2) low; 3..7 stay inputs
    t.eq(fe.amp_model.regs[3], 0xF8, "outputs 0, 1, 2")
    t.eq([fe.amp_model.level(i) for i in range(4)], [1, 1, 0, None], "levels")


async def test_tdm_mic_and_reference_line_up_with_the_frame_tx_clocks():
    # ESP-IDF makes RX a slave of TX's BCLK/WS on one controller: the
    # ES7210's 4 x 16-bit frame is read right only if TX clocks 64 BCLK too.
    from hal.host.i2s_model import HostI2S
    tdm = _profile("sening")["audio"]
    narrow = HostI2S(tdm, {"tx_data_bits": 16, "tx_slot_bits": 16, "rx_slot_bits": 16})
    narrow.start()
    t.true("misaligned" in narrow.rx_fault(), "16-bit TX slots: 32 BCLK against 64")
    for name in ("sening", "esp32-s3-box-3"):
        b, _ = _board(name)
        t.eq(b.frontend.mic_fault(), None, name + " mic")
        b.speaker.begin_reply()
        await b.speaker.write_frame(b"\xf8\xff\xfe")   # the reference carries what plays
        level = b.frontend.reference_slot(-1.0)
        t.true(isinstance(level, tuple), "%s reference: %s" % (name, level))


async def test_a_loud_reply_reaches_the_echo_reference_unclipped():
    # The loopback reaches ES7210 MIC3, TDM slot 1: at the mics' 28-30 dB it
    # would clip and the echo canceller would work on a distorted copy.
    for name in ("sening", "esp32-s3-box-3"):
        b, _ = _board(name)
        b.speaker.set_volume(100)
        b.speaker.begin_reply()
        await b.speaker.write_frame(b"\xf8\xff\xfe")
        t.eq(b.speaker.unheard, 0, name + " reply heard")
        level, clipped = b.frontend.reference_slot(-1.0)   # a reply peaking at -1 dBFS
        t.eq(clipped, False, "%s reference clipped (%.1f dBFS)" % (name, level))
        t.true(-20 < level < 0, "%s reference at %.1f dBFS" % (name, level))
        t.true(b.frontend.adc.gain_db(0) >= 24, name + ": the mic keeps its gain")


def test_a_wrong_codec_address_stops_the_boot_naming_chip_address_and_bus():
    wrong = _profile("sening")
    wrong["codecs"][1]["addr"] = 0x42
    e = t.raises(OSError, hal.host.board, t.tmpdir("wrong"), exit_fn=lambda c: None,
                 profile=wrong, hardware="sening")
    t.true("es7210 at 0x42 on I2C0 (SDA GPIO1, SCL GPIO2)" in str(e), str(e))
    other = _profile("sening")
    other["codecs"][0]["addr"] = 0x19   # the PCA9557 answers there: not an ES8311
    e = t.raises(OSError, hal.host.board, t.tmpdir("wrong"), exit_fn=lambda c: None,
                 profile=other, hardware="sening")
    t.true("es8311 at 0x19" in str(e) and "not an ES8311" in str(e), str(e))


def test_standby_powers_the_codecs_down_and_the_amplifier_off():
    b, exits = _board("sening")
    b.power.standby("power_off")
    t.eq(exits, [0], "standby exits")
    fe = b.frontend
    t.true(fe.models["es8311"].powered_down(), "es8311 down")
    t.true(fe.models["es7210"].powered_down(), "es7210 down")
    t.eq(fe.amp_model.level(1), 0, "amplifier off")
    t.true(fe.speaker_fault() is not None, "nothing plays in standby")


async def test_speaker_and_mic_pass_nothing_while_their_path_is_off():
    b, _ = _board("sening")
    b.frontend.driver.dac.enable(False)
    b.speaker.begin_reply()
    for _ in range(3):
        await b.speaker.write_frame(b"\xf8\xff\xfe")
    t.eq(b.speaker.unheard, 3, "frames not heard")
    t.eq(b.speaker.replies, [], "no reply recorded")
    b.frontend.driver.adc.power_down()
    b.mic.feed_frames([b"\x01\x02", b"\x03\x04"])
    buf = bytearray(64)
    t.eq(await b.mic.read_frame(buf), 0, "silence while the ADC is down")
    t.eq(b.mic.lost, 1, "the sound is lost")
    b.frontend.driver.adc.enable(True)
    t.eq(await b.mic.read_frame(buf), 2, "the mic hears once the ADC is on")
    b.frontend.driver.dac.enable(True)
    b.frontend.set_volume(70)
    await b.speaker.write_frame(b"\xf8\xff\xfe")
    t.eq(len(b.speaker.replies), 1, "heard once the DAC is on")


def test_bad_profiles_name_the_field():
    cases = (
        (("audio", "mode"), "stereo", "audio.mode"),
        (("audio", "pins", "mclk"), 60, "audio.pins.mclk"),
        (("audio", "pins", "bclk"), 45, "audio.pins.dout: GPIO45 is already audio.pins.bclk"),
        (("codecs", 0, "addr"), 0x90, "codecs[0].addr"),
        (("amp", "pin"), 9, "amp.pin"),
        (("rtc_int",), 40, "rtc_int: GPIO40 is not an RTC GPIO"),
        (("audio", "ref_slot"), 0, "audio.ref_slot"),
        (("codecs", 1, "ref_gain_db"), 50, "codecs[1].ref_gain_db: 50: 0..42 dB"),
        (("amp", "hold"), [[1, 1]], "amp.hold[0]"),   # the amplifier's own output
    )
    for path, value, want in cases:
        p = _profile("sening")
        d = p
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
        e = t.raises(profiles.ProfileError, profiles.validate, p, "sening")
        t.true(str(e).startswith("sening: " + want), "%s: %s" % (want, e))
    p = _profile("sening")
    del p["i2c"]
    t.true("i2c: missing" in str(t.raises(profiles.ProfileError, profiles.validate, p)), "missing")
    p = _profile("bread-compact")
    p["codecs"] = _profile("sening")["codecs"]
    t.true("simplex" in str(t.raises(profiles.ProfileError, profiles.validate, p)), "simplex + codec")


def test_engine_gets_the_profile_s_mode_rates_pins_and_slots():
    keys = ["bclk", "din", "dout", "mclk", "mic_bclk", "mic_rate", "mic_slot", "mic_ws", "mode",
            "rate", "ref_slot", "tdm_slots", "ws"]   # xzaudio.start()'s keywords, no other
    sening = profiles.engine_args(_profile("sening"))
    t.eq(sorted(sening), keys, "keywords")
    t.eq(sening, {"mode": 1, "rate": 24000, "mic_rate": 24000, "mclk": 38, "bclk": 14, "ws": 13,
                  "dout": 45, "din": 12, "mic_bclk": -1, "mic_ws": -1, "tdm_slots": 4,
                  "mic_slot": 0, "ref_slot": 1}, "sening")
    bread = profiles.engine_args(_profile("bread-compact"))
    t.eq(bread, {"mode": 2, "rate": 24000, "mic_rate": 16000, "mclk": -1, "bclk": 15, "ws": 16,
                 "dout": 7, "din": 6, "mic_bclk": 5, "mic_ws": 4, "tdm_slots": 4,
                 "mic_slot": 0, "ref_slot": -1}, "bread-compact")


def test_models_record_writes_to_registers_the_chip_does_not_have():
    fe = _frontend("sening")
    fe.open()
    bus = fe.driver.dac._i2c
    bus.writeto_mem(0x18, 0x20, b"\x55")      # no ES8311 register at 0x20
    bus.writeto_mem(0x19, 0x07, b"\x01")      # the PCA9557 has four registers
    t.eq(fe.models["es8311"].unknown, [(0x20, 0x55)], "es8311")
    t.eq(fe.models["pca9557"].unknown, [(0x07, 0x01)], "pca9557")


def test_a_duplex_board_with_one_es8311_gates_its_mic_on_the_adc():
    # An ES8311-only board (DAC and ADC on one chip, standard I2S both ways),
    # the most common xiaozhi wiring: a profile is all it takes.
    p = _profile("esp32-s3-box-3")
    p["name"] = "duplex-test"
    p["audio"] = {"mode": "duplex", "rate": 24000, "mic_rate": 24000,
                  "pins": {"mclk": 2, "bclk": 17, "ws": 45, "dout": 15, "din": 16}}
    p["codecs"] = [{"chip": "es8311", "addr": 0x18, "role": "both", "mic_gain_db": 24}]
    profiles.validate(p)
    fe = HostFrontend(I2CBus(), p)
    fe.start_i2s()
    t.true("state machine off" in fe.mic_fault(), fe.mic_fault())
    fe.open()
    fe.set_volume(50)
    fe.output(True)
    t.eq((fe.speaker_fault(), fe.mic_fault()), (None, None), "both paths on")
    t.eq(fe.dac.regs[0x16], 4, "mic gain 24 dB")
    fe.power_down()
    t.true("state machine off" in fe.mic_fault(), "mic down before standby")
    t.eq(profiles.engine_args(p)["mode"], 0, "xzaudio.MODE_DUPLEX")


def test_an_image_without_a_frozen_profile_says_how_to_get_one():
    e = t.raises(profiles.ProfileError, profiles.frozen)
    t.true("tools/flash.py --board NAME" in str(e), str(e))
