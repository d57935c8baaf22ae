#include "xz_i2s.h"

#include "driver/i2s_std.h"
#include "freertos/FreeRTOS.h"

static i2s_chan_handle_t s_tx, s_rx;

static i2s_std_config_t std_config(const xz_pins_t *p, uint32_t rate) {
    i2s_std_config_t c = {
        .clk_cfg = I2S_STD_CLK_DEFAULT_CONFIG(rate),
        .slot_cfg = I2S_STD_PHILIPS_SLOT_DEFAULT_CONFIG(I2S_DATA_BIT_WIDTH_16BIT, I2S_SLOT_MODE_MONO),
        .gpio_cfg = {
            .mclk = p->mclk,
            .bclk = p->bclk,
            .ws = p->ws,
            .dout = p->dout,
            .din = p->din,
            .invert_flags = {.mclk_inv = false, .bclk_inv = false, .ws_inv = false},
        },
    };
    /* 256 x fs is what the ES8311 expects on its MCLK pin. */
    c.clk_cfg.mclk_multiple = I2S_MCLK_MULTIPLE_256;
    return c;
}

int xz_i2s_open(const xz_pins_t *p) {
    i2s_chan_config_t cc = I2S_CHANNEL_DEFAULT_CONFIG(I2S_NUM_0, I2S_ROLE_MASTER);
    i2s_std_config_t sc = std_config(p, p->rate);
    esp_err_t err;
    cc.dma_desc_num = 6;
    cc.dma_frame_num = p->rate * XZ_I2S_BLOCK_MS / 1000;
    /* On a TX underrun send silence rather than replaying the last DMA buffer. */
    cc.auto_clear = true;
    /* Both handles from one call: one controller in full-duplex mode. */
    err = i2s_new_channel(&cc, &s_tx, &s_rx);
    if (err == ESP_OK) err = i2s_channel_init_std_mode(s_tx, &sc);
    if (err == ESP_OK) err = i2s_channel_init_std_mode(s_rx, &sc);
    if (err == ESP_OK) err = i2s_channel_enable(s_tx);
    if (err == ESP_OK) err = i2s_channel_enable(s_rx);
    if (err != ESP_OK) xz_i2s_close();
    return err;
}

void xz_i2s_close(void) {
    if (s_tx) {
        i2s_channel_disable(s_tx);
        i2s_del_channel(s_tx);
        s_tx = NULL;
    }
    if (s_rx) {
        i2s_channel_disable(s_rx);
        i2s_del_channel(s_rx);
        s_rx = NULL;
    }
}

size_t xz_i2s_read(int16_t *dst, size_t samples, uint32_t timeout_ms) {
    size_t got = 0;
    i2s_channel_read(s_rx, dst, samples * sizeof(int16_t), &got, pdMS_TO_TICKS(timeout_ms));
    return got;
}

size_t xz_i2s_write(const int16_t *src, size_t samples, uint32_t timeout_ms) {
    size_t put = 0;
    i2s_channel_write(s_tx, src, samples * sizeof(int16_t), &put, pdMS_TO_TICKS(timeout_ms));
    return put;
}

int xz_i2s_set_rate(uint32_t rate) {
    i2s_std_clk_config_t clk = I2S_STD_CLK_DEFAULT_CONFIG(rate);
    esp_err_t err;
    clk.mclk_multiple = I2S_MCLK_MULTIPLE_256;
    /* The clock can only change on a disabled channel. */
    i2s_channel_disable(s_tx);
    i2s_channel_disable(s_rx);
    err = i2s_channel_reconfig_std_clock(s_tx, &clk);
    if (err == ESP_OK) err = i2s_channel_reconfig_std_clock(s_rx, &clk);
    i2s_channel_enable(s_tx);
    i2s_channel_enable(s_rx);
    return err;
}
