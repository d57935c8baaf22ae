#include "xz_i2s.h"

#include "driver/i2s_std.h"
#include "driver/i2s_tdm.h"
#include "freertos/FreeRTOS.h"

#include "xz_pcm.h"

#define RAW_FRAMES 240 /* one 10 ms block at 24 kHz: frames per driver read */
#define DMA_DESC 6

static struct {
    i2s_chan_handle_t tx, rx;
    xz_pins_t p;
    /* Wire-format staging: TDM frames of 16-bit slots, or 32-bit slots. */
    union {
        int16_t tdm[RAW_FRAMES * XZ_TDM_SLOTS_MAX];
        int32_t w32[RAW_FRAMES * 2];
    } raw;
} S;

static i2s_std_config_t std_config(uint32_t rate, i2s_data_bit_width_t bits, int mclk, int bclk, int ws,
                                   int dout, int din) {
    i2s_std_config_t c = {
        .clk_cfg = I2S_STD_CLK_DEFAULT_CONFIG(rate),
        .slot_cfg = I2S_STD_PHILIPS_SLOT_DEFAULT_CONFIG(bits, I2S_SLOT_MODE_MONO),
        .gpio_cfg = {
            .mclk = mclk,
            .bclk = bclk,
            .ws = ws,
            .dout = dout,
            .din = din,
            .invert_flags = {.mclk_inv = false, .bclk_inv = false, .ws_inv = false},
        },
    };
    /* 256 x fs is what the ES8311 and ES7210 expect on MCLK. */
    c.clk_cfg.mclk_multiple = I2S_MCLK_MULTIPLE_256;
    if (bits == I2S_DATA_BIT_WIDTH_32BIT) {
        /* INMP441 / MAX98357A: the left slot only, data MSB first from
         * the second BCLK (Philips), as the stock firmware sets them. */
        c.slot_cfg.slot_mask = I2S_STD_SLOT_LEFT;
        c.slot_cfg.ws_width = I2S_DATA_BIT_WIDTH_32BIT;
    }
    return c;
}

static i2s_tdm_config_t tdm_config(const xz_pins_t *p, uint32_t rate) {
    i2s_tdm_config_t c = {
        .clk_cfg = I2S_TDM_CLK_DEFAULT_CONFIG(rate),
        /* Every slot active and delivered, 16 bits each, Philips timing:
         * the ES7210's TDM output as xiaozhi-esp32's BoxAudioCodec reads it. */
        .slot_cfg = I2S_TDM_PHILIPS_SLOT_DEFAULT_CONFIG((i2s_data_bit_width_t)XZ_I2S_RX_SLOT_BITS, I2S_SLOT_MODE_STEREO,
                                                        (i2s_tdm_slot_mask_t)((1u << p->tdm_slots) - 1u)),
        .gpio_cfg = {
            .mclk = p->mclk,
            .bclk = p->bclk,
            .ws = p->ws,
            .dout = I2S_GPIO_UNUSED,
            .din = p->din,
            .invert_flags = {.mclk_inv = false, .bclk_inv = false, .ws_inv = false},
        },
    };
    c.clk_cfg.mclk_multiple = I2S_MCLK_MULTIPLE_256;
    return c;
}

static i2s_chan_config_t chan_config(i2s_port_t port, uint32_t rate) {
    i2s_chan_config_t cc = I2S_CHANNEL_DEFAULT_CONFIG(port, I2S_ROLE_MASTER);
    cc.dma_desc_num = DMA_DESC;
    cc.dma_frame_num = rate * XZ_I2S_BLOCK_MS / 1000;
    /* On a TX underrun send silence rather than replaying the last DMA buffer. */
    cc.auto_clear = true;
    return cc;
}

/* One controller, TX and RX from one call (full duplex), sharing the
 * clocks: TX is the master, so its frame sets the BCLK count per WS
 * period (xz_i2s.h). 16-bit samples in 32-bit slots, WS half the frame. */
static i2s_std_config_t shared_std_config(const xz_pins_t *p, int din) {
    i2s_std_config_t c = std_config(p->rate, (i2s_data_bit_width_t)XZ_I2S_TX_DATA_BITS, p->mclk, p->bclk, p->ws, p->dout, din);
    c.slot_cfg.slot_bit_width = (i2s_slot_bit_width_t)XZ_I2S_TX_SLOT_BITS;
    c.slot_cfg.ws_width = XZ_I2S_TX_SLOT_BITS;
    return c;
}

static esp_err_t open_shared(const xz_pins_t *p) {
    i2s_chan_config_t cc = chan_config(I2S_NUM_0, p->rate);
    i2s_std_config_t tx = shared_std_config(p, p->mode == XZ_MODE_DUPLEX ? p->din : I2S_GPIO_UNUSED);
    esp_err_t err = i2s_new_channel(&cc, &S.tx, &S.rx);
    if (err == ESP_OK) err = i2s_channel_init_std_mode(S.tx, &tx);
    if (err == ESP_OK) {
        if (p->mode == XZ_MODE_TDM) {
            i2s_tdm_config_t rx = tdm_config(p, p->rate);
            err = i2s_channel_init_tdm_mode(S.rx, &rx);
        } else {
            err = i2s_channel_init_std_mode(S.rx, &tx);
        }
    }
    return err;
}

/* Speaker on I2S0, mic on I2S1, each with its own clock and rate. */
static esp_err_t open_simplex(const xz_pins_t *p) {
    i2s_chan_config_t tcc = chan_config(I2S_NUM_0, p->rate);
    i2s_chan_config_t rcc = chan_config(I2S_NUM_1, p->mic_rate);
    i2s_std_config_t tx = std_config(p->rate, I2S_DATA_BIT_WIDTH_32BIT, I2S_GPIO_UNUSED, p->bclk, p->ws,
                                     p->dout, I2S_GPIO_UNUSED);
    i2s_std_config_t rx = std_config(p->mic_rate, I2S_DATA_BIT_WIDTH_32BIT, I2S_GPIO_UNUSED, p->mic_bclk,
                                     p->mic_ws, I2S_GPIO_UNUSED, p->din);
    esp_err_t err = i2s_new_channel(&tcc, &S.tx, NULL);
    if (err == ESP_OK) err = i2s_channel_init_std_mode(S.tx, &tx);
    if (err == ESP_OK) err = i2s_new_channel(&rcc, NULL, &S.rx);
    if (err == ESP_OK) err = i2s_channel_init_std_mode(S.rx, &rx);
    return err;
}

int xz_i2s_open(const xz_pins_t *p) {
    esp_err_t err;
    S.p = *p;
    err = p->mode == XZ_MODE_SIMPLEX ? open_simplex(p) : open_shared(p);
    if (err == ESP_OK) err = i2s_channel_enable(S.tx);
    if (err == ESP_OK) err = i2s_channel_enable(S.rx);
    if (err != ESP_OK) xz_i2s_close();
    return err;
}

static void drop(i2s_chan_handle_t *h) {
    if (*h) {
        i2s_channel_disable(*h);
        i2s_del_channel(*h);
        *h = NULL;
    }
}

void xz_i2s_close(void) {
    drop(&S.tx);
    drop(&S.rx);
}

size_t xz_i2s_read(int16_t *mic, int16_t *ref, size_t frames, uint32_t timeout_ms) {
    size_t got = 0, done = 0;
    TickType_t wait = pdMS_TO_TICKS(timeout_ms);
    if (S.p.mode == XZ_MODE_DUPLEX) {
        i2s_channel_read(S.rx, mic, frames * sizeof(int16_t), &got, wait);
        return got / sizeof(int16_t);
    }
    while (done < frames) {
        size_t want = frames - done < RAW_FRAMES ? frames - done : RAW_FRAMES, n;
        if (S.p.mode == XZ_MODE_TDM) {
            uint32_t slots = (uint32_t)S.p.tdm_slots;
            i2s_channel_read(S.rx, S.raw.tdm, want * slots * sizeof(int16_t), &got, wait);
            n = got / (slots * sizeof(int16_t));
            xz_pcm_take_slot(S.raw.tdm, (uint32_t)n, slots, (uint32_t)S.p.mic_slot, mic + done);
            if (ref && S.p.ref_slot >= 0) {
                xz_pcm_take_slot(S.raw.tdm, (uint32_t)n, slots, (uint32_t)S.p.ref_slot, ref + done);
            }
        } else {
            i2s_channel_read(S.rx, S.raw.w32, want * sizeof(int32_t), &got, wait);
            n = got / sizeof(int32_t);
            xz_pcm_from_i32(S.raw.w32, (uint32_t)n, XZ_PCM_INMP441_SHIFT, mic + done);
        }
        done += n;
        if (n < want) break; /* timed out: hand over what came */
    }
    return done;
}

size_t xz_i2s_write(const int16_t *src, size_t samples, uint32_t timeout_ms) {
    size_t put = 0, done = 0;
    TickType_t wait = pdMS_TO_TICKS(timeout_ms);
    if (S.p.mode != XZ_MODE_SIMPLEX) {
        i2s_channel_write(S.tx, src, samples * sizeof(int16_t), &put, wait);
        return put / sizeof(int16_t);
    }
    while (done < samples) {
        size_t want = samples - done < RAW_FRAMES * 2 ? samples - done : RAW_FRAMES * 2;
        xz_pcm_to_i32(src + done, (uint32_t)want, S.raw.w32);
        i2s_channel_write(S.tx, S.raw.w32, want * sizeof(int32_t), &put, wait);
        done += put / sizeof(int32_t);
        if (put < want * sizeof(int32_t)) break;
    }
    return done;
}

static esp_err_t reclock_std(i2s_chan_handle_t h, uint32_t rate) {
    i2s_std_clk_config_t clk = I2S_STD_CLK_DEFAULT_CONFIG(rate);
    clk.mclk_multiple = I2S_MCLK_MULTIPLE_256;
    return i2s_channel_reconfig_std_clock(h, &clk);
}

int xz_i2s_set_rate(uint32_t rate) {
    esp_err_t err;
    int shared = S.p.mode != XZ_MODE_SIMPLEX;
    /* The clock can only change on a disabled channel; one controller's
     * two channels change together. */
    i2s_channel_disable(S.tx);
    if (shared) i2s_channel_disable(S.rx);
    err = reclock_std(S.tx, rate);
    if (err == ESP_OK && shared) {
        if (S.p.mode == XZ_MODE_TDM) {
            i2s_tdm_clk_config_t clk = I2S_TDM_CLK_DEFAULT_CONFIG(rate);
            clk.mclk_multiple = I2S_MCLK_MULTIPLE_256;
            err = i2s_channel_reconfig_tdm_clock(S.rx, &clk);
        } else {
            err = reclock_std(S.rx, rate);
        }
    }
    i2s_channel_enable(S.tx);
    if (shared) i2s_channel_enable(S.rx);
    return err;
}
