/* xzaudio.Speech (XZ_HAVE_IO builds): the speech engine of xz_speech.h
 * (esp-sr on the board, its stand-in on the unix port) as an object the
 * asyncio core can poll for events. Detection runs in the engine's own
 * tasks on the codec task's audio; Python is only touched per event.
 *
 *   sp = xzaudio.Speech()
 *   sp.start("cn")                 # OSError ENOENT: no models; EAGAIN: audio engine not started
 *   sp.set_commands(((1, "qie huan mo shi", "切换模式"), ...))   # -> ids MultiNet refused
 *   ev = sp.event()                # None, or (kind, word, score, level_db)
 *   sp.pause(True); sp.stop()
 */
#include <string.h>

#include "py/mperrno.h"
#include "py/runtime.h"
#include "py/stream.h"

#include "mod_xzaudio_io.h"
#include "xz_speech.h"

static void raise_speech(int rc) {
    if (rc == XZ_SPEECH_ENOMODEL) mp_raise_OSError(MP_ENOENT);
    if (rc == XZ_SPEECH_ESTATE) mp_raise_OSError(MP_EAGAIN);
    mp_raise_OSError(MP_ENOMEM);
}

static mp_obj_t speech_make_new(const mp_obj_type_t *type, size_t n_args, size_t n_kw, const mp_obj_t *args) {
    (void)args;
    mp_arg_check_num(n_args, n_kw, 0, 0, false);
    return MP_OBJ_FROM_PTR(mp_obj_malloc(mp_obj_base_t, type));
}

/* start(lang="cn"): loads the models and starts detection; the audio
 * engine must be running (xzaudio.start). */
static mp_obj_t speech_start(size_t n_args, const mp_obj_t *args) {
    const char *lang = n_args > 1 ? mp_obj_str_get_str(args[1]) : "cn";
    int rc;
    if (strcmp(lang, "cn") != 0 && strcmp(lang, "en") != 0) {
        mp_raise_ValueError(MP_ERROR_TEXT("lang is \"cn\" or \"en\""));
    }
    rc = xz_speech_start(lang);
    if (rc != 0) raise_speech(rc);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(speech_start_obj, 1, 2, speech_start);

static mp_obj_t speech_stop(mp_obj_t self_in) {
    (void)self_in;
    xz_speech_stop();
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(speech_stop_obj, speech_stop);

static mp_obj_t speech_pause(mp_obj_t self_in, mp_obj_t on) {
    (void)self_in;
    xz_speech_pause(mp_obj_is_true(on));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(speech_pause_obj, speech_pause);

static const char *text_arg(mp_obj_t o) {
    size_t len;
    const char *s = mp_obj_str_get_data(o, &len);
    if (len < 1 || len >= XZ_WORDS_TEXT_MAX || strlen(s) != len) {
        mp_raise_ValueError(MP_ERROR_TEXT("command texts and words are 1..63 bytes"));
    }
    return s;
}

/* set_commands(((id, text, word), ...)): the command words MultiNet
 * listens for (text: pinyin for Chinese, words for English; word: what
 * the event reports). Returns the ids of those the model refused. */
static mp_obj_t speech_set_commands(mp_obj_t self_in, mp_obj_t cmds_in) {
    xz_command_t cmds[XZ_SPEECH_MAX_COMMANDS];
    int rejected[XZ_SPEECH_MAX_COMMANDS], i, rc;
    size_t n;
    mp_obj_t *items, out[XZ_SPEECH_MAX_COMMANDS];
    (void)self_in;
    mp_obj_get_array(cmds_in, &n, &items);
    if (n > XZ_SPEECH_MAX_COMMANDS) mp_raise_ValueError(MP_ERROR_TEXT("more than 64 command words"));
    for (i = 0; i < (int)n; i++) {
        mp_obj_t *f;
        mp_int_t id;
        mp_obj_get_array_fixed_n(items[i], 3, &f);
        id = mp_obj_get_int(f[0]);
        if (id < 1 || id > 32767) mp_raise_ValueError(MP_ERROR_TEXT("command ids are 1..32767"));
        cmds[i].id = (int)id;
        cmds[i].text = text_arg(f[1]);
        cmds[i].word = text_arg(f[2]);
    }
    rc = xz_speech_set_commands(cmds, (int)n, rejected, XZ_SPEECH_MAX_COMMANDS);
    if (rc < 0) raise_speech(rc);
    for (i = 0; i < rc; i++) out[i] = MP_OBJ_NEW_SMALL_INT(rejected[i]);
    return mp_obj_new_tuple((size_t)rc, out);
}
static MP_DEFINE_CONST_FUN_OBJ_2(speech_set_commands_obj, speech_set_commands);

/* event(): the next (kind, word, score, level_db), or None. score is None
 * when the engine gives none (a wake word on the board). */
static mp_obj_t speech_event(mp_obj_t self_in) {
    xz_speech_event_t ev;
    const char *word;
    mp_obj_t t[4];
    (void)self_in;
    if (!xz_speech_event(&ev)) return mp_const_none;
    word = xz_speech_word(&ev);
    t[0] = MP_OBJ_NEW_SMALL_INT(ev.kind);
    t[1] = mp_obj_new_str(word, strlen(word));
    t[2] = ev.score < 0 ? mp_const_none : mp_obj_new_float(ev.score);
    t[3] = mp_obj_new_float(ev.level_db);
    return mp_obj_new_tuple(4, t);
}
static MP_DEFINE_CONST_FUN_OBJ_1(speech_event_obj, speech_event);

static mp_obj_t speech_running(mp_obj_t self_in) {
    (void)self_in;
    return mp_obj_new_bool(xz_speech_running());
}
static MP_DEFINE_CONST_FUN_OBJ_1(speech_running_obj, speech_running);

static mp_obj_t speech_aec(mp_obj_t self_in) {
    (void)self_in;
    return mp_obj_new_bool(xz_speech_aec());
}
static MP_DEFINE_CONST_FUN_OBJ_1(speech_aec_obj, speech_aec);

/* models(): (wake word model, command word model); "" for none. */
static mp_obj_t speech_models(mp_obj_t self_in) {
    const char *wn = xz_speech_wake_model(), *mn = xz_speech_command_model();
    mp_obj_t t[2] = {mp_obj_new_str(wn, strlen(wn)), mp_obj_new_str(mn, strlen(mn))};
    (void)self_in;
    return mp_obj_new_tuple(2, t);
}
static MP_DEFINE_CONST_FUN_OBJ_1(speech_models_obj, speech_models);

/* stats(): events posted, events dropped, not heard, blocks fed (xz_speech.h). */
static mp_obj_t speech_stats(mp_obj_t self_in) {
    uint32_t s[4];
    mp_obj_t t[4];
    int i;
    (void)self_in;
    xz_speech_stats(s);
    for (i = 0; i < 4; i++) t[i] = mp_obj_new_int_from_uint(s[i]);
    return mp_obj_new_tuple(4, t);
}
static MP_DEFINE_CONST_FUN_OBJ_1(speech_stats_obj, speech_stats);

static mp_uint_t speech_ioctl(mp_obj_t self_in, mp_uint_t req, uintptr_t arg, int *errcode) {
    (void)self_in;
    if (req == MP_STREAM_POLL) {
        return (arg & MP_STREAM_POLL_RD) && xz_speech_event_pending() ? MP_STREAM_POLL_RD : 0;
    }
    if (req == MP_STREAM_CLOSE) {
        return 0;
    }
    *errcode = MP_EINVAL;
    return MP_STREAM_ERROR;
}

static const mp_stream_p_t speech_stream = {.ioctl = speech_ioctl};

static const mp_rom_map_elem_t speech_locals_table[] = {
    {MP_ROM_QSTR(MP_QSTR_start), MP_ROM_PTR(&speech_start_obj)},
    {MP_ROM_QSTR(MP_QSTR_stop), MP_ROM_PTR(&speech_stop_obj)},
    {MP_ROM_QSTR(MP_QSTR_pause), MP_ROM_PTR(&speech_pause_obj)},
    {MP_ROM_QSTR(MP_QSTR_set_commands), MP_ROM_PTR(&speech_set_commands_obj)},
    {MP_ROM_QSTR(MP_QSTR_event), MP_ROM_PTR(&speech_event_obj)},
    {MP_ROM_QSTR(MP_QSTR_running), MP_ROM_PTR(&speech_running_obj)},
    {MP_ROM_QSTR(MP_QSTR_aec), MP_ROM_PTR(&speech_aec_obj)},
    {MP_ROM_QSTR(MP_QSTR_models), MP_ROM_PTR(&speech_models_obj)},
    {MP_ROM_QSTR(MP_QSTR_stats), MP_ROM_PTR(&speech_stats_obj)},
};
static MP_DEFINE_CONST_DICT(speech_locals, speech_locals_table);

MP_DEFINE_CONST_OBJ_TYPE(xz_speech_type, MP_QSTR_Speech, MP_TYPE_FLAG_NONE,
                         make_new, speech_make_new, protocol, &speech_stream,
                         locals_dict, &speech_locals);
