"""Voice pipeline stages: Opus codec, end-of-turn detection, resampling, sentence segmentation, paced sending."""
