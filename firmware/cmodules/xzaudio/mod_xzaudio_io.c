/* The I/O objects of xzaudio (XZ_HAVE_IO builds: the board engine, or the
 * unix port's host engine): streams the asyncio core can poll.
 * Each readinto/write moves exactly one packet (or one event byte), so a
 * packet's boundaries survive; when nothing is ready they return None,
 * which MicroPython's asyncio Stream treats as "wait for the poll". */
#include <string.h>

#include "py/mperrno.h"
#include "py/runtime.h"
#include "py/stream.h"

#include "mod_xzaudio_io.h"
#include "xz_engine.h"
#include "xz_opus.h"

static xz_pins_t pins = XZ_PINS_DEFAULT;
static int engine_up;

void xz_need_engine(void) {
    if (!engine_up) {
        int rc = xz_engine_start(&pins);
        if (rc != 0) {
            mp_raise_msg_varg(&mp_type_OSError, MP_ERROR_TEXT("audio engine failed to start (%d)"), rc);
        }
        engine_up = 1;
    }
}

static void need(int ok, const char *what) {
    if (!ok) mp_raise_msg_varg(&mp_type_ValueError, MP_ERROR_TEXT("xzaudio.start: %s"), what);
}

/* The set of arguments as a whole: what xz_engine.h's modes can run. */
static void check_pins(const xz_pins_t *p) {
    need(p->mode >= XZ_MODE_DUPLEX && p->mode <= XZ_MODE_SIMPLEX, "mode is MODE_DUPLEX, MODE_TDM or MODE_SIMPLEX");
    need(p->rate == 16000 || p->rate == 24000 || p->rate == 48000, "rate is 16000, 24000 or 48000");
    need(p->mic_rate == 16000 || p->mic_rate == 24000, "mic_rate is 16000 or 24000 (the mic path makes 16 kHz)");
    need(p->mode == XZ_MODE_SIMPLEX || p->mic_rate == p->rate,
         "one controller (MODE_DUPLEX, MODE_TDM) has one rate: mic_rate must equal rate");
    need(p->bclk >= 0 && p->ws >= 0 && p->dout >= 0 && p->din >= 0, "bclk, ws, dout and din are needed");
    if (p->mode == XZ_MODE_TDM) {
        need(p->tdm_slots >= 2 && p->tdm_slots <= XZ_TDM_SLOTS_MAX, "tdm_slots is 2..8");
        need(p->mic_slot >= 0 && p->mic_slot < p->tdm_slots, "mic_slot is one of the tdm_slots");
        need(p->ref_slot >= -1 && p->ref_slot < p->tdm_slots && p->ref_slot != p->mic_slot,
             "ref_slot is -1 or another of the tdm_slots");
    }
    if (p->mode == XZ_MODE_SIMPLEX) {
        need(p->mic_bclk >= 0 && p->mic_ws >= 0, "MODE_SIMPLEX needs mic_bclk and mic_ws");
    }
}

/* start(mode=, rate=, mic_rate=, mclk=, bclk=, ws=, dout=, din=, mic_bclk=,
 * mic_ws=, tdm_slots=, mic_slot=, ref_slot=): the board's wiring (its
 * profile); must come before the first audio object. Defaults: the
 * default board, XZ_PINS_DEFAULT. */
static mp_obj_t xz_start(size_t n_args, const mp_obj_t *pos, mp_map_t *kw) {
    enum { A_MODE, A_RATE, A_MIC_RATE, A_MCLK, A_BCLK, A_WS, A_DOUT, A_DIN, A_MIC_BCLK, A_MIC_WS,
           A_TDM_SLOTS, A_MIC_SLOT, A_REF_SLOT };
    static const mp_arg_t allowed[] = {
        {MP_QSTR_mode, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = 0}},
        {MP_QSTR_rate, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = 24000}},
        {MP_QSTR_mic_rate, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = 0}},
        {MP_QSTR_mclk, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = 38}},
        {MP_QSTR_bclk, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = 14}},
        {MP_QSTR_ws, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = 13}},
        {MP_QSTR_dout, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = 45}},
        {MP_QSTR_din, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = 12}},
        {MP_QSTR_mic_bclk, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = -1}},
        {MP_QSTR_mic_ws, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = -1}},
        {MP_QSTR_tdm_slots, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = 4}},
        {MP_QSTR_mic_slot, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = 0}},
        {MP_QSTR_ref_slot, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = -1}},
    };
    mp_arg_val_t a[MP_ARRAY_SIZE(allowed)];
    xz_pins_t p;
    mp_arg_parse_all(n_args, pos, kw, MP_ARRAY_SIZE(allowed), allowed, a);
    if (engine_up) {
        mp_raise_msg(&mp_type_OSError, MP_ERROR_TEXT("audio engine already running"));
    }
    p.mode = a[A_MODE].u_int;
    p.rate = (uint32_t)a[A_RATE].u_int;
    p.mic_rate = a[A_MIC_RATE].u_int > 0 ? (uint32_t)a[A_MIC_RATE].u_int : p.rate;
    p.mclk = a[A_MCLK].u_int;
    p.bclk = a[A_BCLK].u_int;
    p.ws = a[A_WS].u_int;
    p.dout = a[A_DOUT].u_int;
    p.din = a[A_DIN].u_int;
    p.mic_bclk = a[A_MIC_BCLK].u_int;
    p.mic_ws = a[A_MIC_WS].u_int;
    p.tdm_slots = a[A_TDM_SLOTS].u_int;
    p.mic_slot = a[A_MIC_SLOT].u_int;
    p.ref_slot = a[A_REF_SLOT].u_int;
    check_pins(&p);
    pins = p;
    xz_need_engine();
    return mp_const_none;
}
MP_DEFINE_CONST_FUN_OBJ_KW(xz_start_obj, 0, xz_start);

/* running(): the engine has started (by start(), or by the first audio
 * object with the default wiring). */
static mp_obj_t xz_running(void) {
    return mp_obj_new_bool(engine_up);
}
MP_DEFINE_CONST_FUN_OBJ_0(xz_running_obj, xz_running);

static mp_obj_t stats_tuple(void) {
    uint32_t s[4];
    mp_obj_t t[4];
    int i;
    xz_engine_stats(s);
    for (i = 0; i < 4; i++) t[i] = mp_obj_new_int_from_uint(s[i]);
    return mp_obj_new_tuple(4, t);
}

/* ---- AudioIn ---- */

typedef struct {
    mp_obj_base_t base;
    uint32_t rate, frame_ms;
} audioin_obj_t;

static mp_obj_t audioin_make_new(const mp_obj_type_t *type, size_t n_args, size_t n_kw, const mp_obj_t *args) {
    audioin_obj_t *self;
    mp_arg_check_num(n_args, n_kw, 0, 2, false);
    xz_need_engine();
    self = mp_obj_malloc(audioin_obj_t, type);
    self->rate = n_args > 0 ? (uint32_t)mp_obj_get_int(args[0]) : 16000;
    self->frame_ms = n_args > 1 ? (uint32_t)mp_obj_get_int(args[1]) : 60;
    return MP_OBJ_FROM_PTR(self);
}

static mp_obj_t audioin_start(mp_obj_t self_in) {
    audioin_obj_t *self = MP_OBJ_TO_PTR(self_in);
    int rc = xz_mic_start(self->rate, self->frame_ms);
    if (rc != 0) mp_raise_msg_varg(&mp_type_ValueError, MP_ERROR_TEXT("mic start failed (%d)"), rc);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(audioin_start_obj, audioin_start);

static mp_obj_t audioin_stop(mp_obj_t self_in) {
    (void)self_in;
    xz_mic_stop();
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(audioin_stop_obj, audioin_stop);

static mp_obj_t audioin_readinto(mp_obj_t self_in, mp_obj_t buf_in) {
    mp_buffer_info_t b;
    int n;
    (void)self_in;
    mp_get_buffer_raise(buf_in, &b, MP_BUFFER_WRITE);
    n = xz_mic_pop(b.buf, (uint32_t)b.len);
    if (n == -1) return mp_const_none;
    if (n == -2) mp_raise_ValueError(MP_ERROR_TEXT("buffer smaller than the packet"));
    return MP_OBJ_NEW_SMALL_INT(n);
}
static MP_DEFINE_CONST_FUN_OBJ_2(audioin_readinto_obj, audioin_readinto);

static mp_obj_t any_stats(mp_obj_t self_in) {
    (void)self_in;
    return stats_tuple();
}
static MP_DEFINE_CONST_FUN_OBJ_1(any_stats_obj, any_stats);

static mp_uint_t audioin_ioctl(mp_obj_t self_in, mp_uint_t req, uintptr_t arg, int *errcode) {
    (void)self_in;
    if (req == MP_STREAM_POLL) {
        return (arg & MP_STREAM_POLL_RD) && xz_mic_readable() ? MP_STREAM_POLL_RD : 0;
    }
    if (req == MP_STREAM_CLOSE) {
        xz_mic_stop();
        return 0;
    }
    *errcode = MP_EINVAL;
    return MP_STREAM_ERROR;
}

static const mp_stream_p_t audioin_stream = {.ioctl = audioin_ioctl};

static const mp_rom_map_elem_t audioin_locals_table[] = {
    {MP_ROM_QSTR(MP_QSTR_start), MP_ROM_PTR(&audioin_start_obj)},
    {MP_ROM_QSTR(MP_QSTR_stop), MP_ROM_PTR(&audioin_stop_obj)},
    {MP_ROM_QSTR(MP_QSTR_readinto), MP_ROM_PTR(&audioin_readinto_obj)},
    {MP_ROM_QSTR(MP_QSTR_stats), MP_ROM_PTR(&any_stats_obj)},
};
static MP_DEFINE_CONST_DICT(audioin_locals, audioin_locals_table);

MP_DEFINE_CONST_OBJ_TYPE(xz_audioin_type, MP_QSTR_AudioIn, MP_TYPE_FLAG_NONE,
                         make_new, audioin_make_new, protocol, &audioin_stream,
                         locals_dict, &audioin_locals);

/* ---- AudioOut ---- */

static mp_obj_t audioout_make_new(const mp_obj_type_t *type, size_t n_args, size_t n_kw, const mp_obj_t *args) {
    mp_obj_base_t *self;
    int rc;
    mp_arg_check_num(n_args, n_kw, 0, 1, false);
    xz_need_engine();
    rc = xz_spk_start(n_args > 0 ? (uint32_t)mp_obj_get_int(args[0]) : 24000);
    if (rc != 0) mp_raise_msg_varg(&mp_type_ValueError, MP_ERROR_TEXT("speaker start failed (%d)"), rc);
    self = mp_obj_malloc(mp_obj_base_t, type);
    return MP_OBJ_FROM_PTR(self);
}

static mp_obj_t audioout_write(mp_obj_t self_in, mp_obj_t pkt_in) {
    mp_buffer_info_t b;
    (void)self_in;
    mp_get_buffer_raise(pkt_in, &b, MP_BUFFER_READ);
    if (b.len > XZ_OPUS_MAX_PACKET) mp_raise_ValueError(MP_ERROR_TEXT("not one Opus packet"));
    if (!xz_spk_writable((uint32_t)b.len) || xz_spk_push(b.buf, (uint32_t)b.len) != 0) {
        return mp_const_none; /* full: the caller drops or waits */
    }
    return MP_OBJ_NEW_SMALL_INT(b.len);
}
static MP_DEFINE_CONST_FUN_OBJ_2(audioout_write_obj, audioout_write);

static mp_obj_t audioout_flush(mp_obj_t self_in) {
    (void)self_in;
    xz_spk_flush();
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(audioout_flush_obj, audioout_flush);

static mp_obj_t audioout_volume(mp_obj_t self_in, mp_obj_t pct) {
    (void)self_in;
    xz_spk_volume(mp_obj_get_int(pct));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(audioout_volume_obj, audioout_volume);

static mp_uint_t audioout_ioctl(mp_obj_t self_in, mp_uint_t req, uintptr_t arg, int *errcode) {
    (void)self_in;
    if (req == MP_STREAM_POLL) {
        /* Writable once a typical 60 ms speech packet would fit. */
        return (arg & MP_STREAM_POLL_WR) && xz_spk_writable(400) ? MP_STREAM_POLL_WR : 0;
    }
    if (req == MP_STREAM_CLOSE || req == MP_STREAM_FLUSH) {
        return 0;
    }
    *errcode = MP_EINVAL;
    return MP_STREAM_ERROR;
}

static const mp_stream_p_t audioout_stream = {.ioctl = audioout_ioctl};

static const mp_rom_map_elem_t audioout_locals_table[] = {
    {MP_ROM_QSTR(MP_QSTR_write), MP_ROM_PTR(&audioout_write_obj)},
    {MP_ROM_QSTR(MP_QSTR_flush), MP_ROM_PTR(&audioout_flush_obj)},
    {MP_ROM_QSTR(MP_QSTR_volume), MP_ROM_PTR(&audioout_volume_obj)},
    {MP_ROM_QSTR(MP_QSTR_stats), MP_ROM_PTR(&any_stats_obj)},
};
static MP_DEFINE_CONST_DICT(audioout_locals, audioout_locals_table);

MP_DEFINE_CONST_OBJ_TYPE(xz_audioout_type, MP_QSTR_AudioOut, MP_TYPE_FLAG_NONE,
                         make_new, audioout_make_new, protocol, &audioout_stream,
                         locals_dict, &audioout_locals);

/* ---- Mp3Player ---- */

static mp_obj_t mp3_make_new(const mp_obj_type_t *type, size_t n_args, size_t n_kw, const mp_obj_t *args) {
    mp_obj_base_t *self;
    (void)args;
    mp_arg_check_num(n_args, n_kw, 0, 0, false);
    xz_need_engine();
    self = mp_obj_malloc(mp_obj_base_t, type);
    return MP_OBJ_FROM_PTR(self);
}

/* The file is read by MicroPython (its VFS holds the SD card) and fed:
 * begin() starts a stream (stopping the current one), feed(buf, n) hands
 * over buf[:n], end(failed) marks its end. */
static mp_obj_t mp3_begin(mp_obj_t self_in) {
    (void)self_in;
    if (xz_mp3_begin() != 0) mp_raise_msg(&mp_type_OSError, MP_ERROR_TEXT("audio engine stopped"));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(mp3_begin_obj, mp3_begin);

/* n when taken whole; None when it does not fit yet (poll for writable);
 * 0 when the stream takes no more (stopped, failed, ended). */
static mp_obj_t mp3_feed(mp_obj_t self_in, mp_obj_t buf_in, mp_obj_t n_in) {
    mp_buffer_info_t b;
    mp_int_t n = mp_obj_get_int(n_in);
    int rc;
    (void)self_in;
    mp_get_buffer_raise(buf_in, &b, MP_BUFFER_READ);
    if (n < 1 || (size_t)n > b.len || n > XZ_MP3_CHUNK) {
        mp_raise_ValueError(MP_ERROR_TEXT("feed takes 1..MP3_CHUNK bytes of the buffer"));
    }
    rc = xz_mp3_feed(b.buf, (uint32_t)n);
    if (rc == 0) return mp_const_none;
    return MP_OBJ_NEW_SMALL_INT(rc < 0 ? 0 : rc);
}
static MP_DEFINE_CONST_FUN_OBJ_3(mp3_feed_obj, mp3_feed);

static mp_obj_t mp3_end(mp_obj_t self_in, mp_obj_t failed_in) {
    (void)self_in;
    xz_mp3_end(mp_obj_is_true(failed_in));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(mp3_end_obj, mp3_end);

static mp_obj_t mp3_pause(mp_obj_t self_in) {
    (void)self_in;
    xz_mp3_pause(1);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(mp3_pause_obj, mp3_pause);

static mp_obj_t mp3_resume(mp_obj_t self_in) {
    (void)self_in;
    xz_mp3_pause(0);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(mp3_resume_obj, mp3_resume);

static mp_obj_t mp3_stop(mp_obj_t self_in) {
    (void)self_in;
    xz_mp3_stop();
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(mp3_stop_obj, mp3_stop);

static mp_obj_t mp3_state(mp_obj_t self_in) {
    (void)self_in;
    return MP_OBJ_NEW_SMALL_INT(xz_mp3_state());
}
static MP_DEFINE_CONST_FUN_OBJ_1(mp3_state_obj, mp3_state);

static mp_obj_t mp3_readinto(mp_obj_t self_in, mp_obj_t buf_in) {
    mp_buffer_info_t b;
    int ev;
    (void)self_in;
    mp_get_buffer_raise(buf_in, &b, MP_BUFFER_WRITE);
    if (b.len < 1) mp_raise_ValueError(MP_ERROR_TEXT("empty buffer"));
    ev = xz_mp3_event();
    if (ev < 0) return mp_const_none;
    ((uint8_t *)b.buf)[0] = (uint8_t)ev;
    return MP_OBJ_NEW_SMALL_INT(1);
}
static MP_DEFINE_CONST_FUN_OBJ_2(mp3_readinto_obj, mp3_readinto);

static mp_uint_t mp3_ioctl(mp_obj_t self_in, mp_uint_t req, uintptr_t arg, int *errcode) {
    (void)self_in;
    if (req == MP_STREAM_POLL) {
        /* Readable: an event is waiting. Writable: feed() would not say
         * None, so a feeding task waits here instead of sleeping. */
        mp_uint_t ready = 0;
        if ((arg & MP_STREAM_POLL_RD) && xz_mp3_event_pending()) ready |= MP_STREAM_POLL_RD;
        if ((arg & MP_STREAM_POLL_WR) && xz_mp3_feed_ready()) ready |= MP_STREAM_POLL_WR;
        return ready;
    }
    if (req == MP_STREAM_CLOSE) {
        return 0;
    }
    *errcode = MP_EINVAL;
    return MP_STREAM_ERROR;
}

static const mp_stream_p_t mp3_stream = {.ioctl = mp3_ioctl};

static const mp_rom_map_elem_t mp3_locals_table[] = {
    {MP_ROM_QSTR(MP_QSTR_begin), MP_ROM_PTR(&mp3_begin_obj)},
    {MP_ROM_QSTR(MP_QSTR_feed), MP_ROM_PTR(&mp3_feed_obj)},
    {MP_ROM_QSTR(MP_QSTR_end), MP_ROM_PTR(&mp3_end_obj)},
    {MP_ROM_QSTR(MP_QSTR_pause), MP_ROM_PTR(&mp3_pause_obj)},
    {MP_ROM_QSTR(MP_QSTR_resume), MP_ROM_PTR(&mp3_resume_obj)},
    {MP_ROM_QSTR(MP_QSTR_stop), MP_ROM_PTR(&mp3_stop_obj)},
    {MP_ROM_QSTR(MP_QSTR_state), MP_ROM_PTR(&mp3_state_obj)},
    {MP_ROM_QSTR(MP_QSTR_readinto), MP_ROM_PTR(&mp3_readinto_obj)},
};
static MP_DEFINE_CONST_DICT(mp3_locals, mp3_locals_table);

MP_DEFINE_CONST_OBJ_TYPE(xz_mp3player_type, MP_QSTR_Mp3Player, MP_TYPE_FLAG_NONE,
                         make_new, mp3_make_new, protocol, &mp3_stream,
                         locals_dict, &mp3_locals);
