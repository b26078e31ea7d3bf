"""Shared helpers of the AlphaStar-on-SMAC tests."""

# Tiny AlphaStar network sizes: every module of the real architecture, small enough for fast tests.
TINY = dict(entity_d_model=16, entity_heads=2, entity_layers=1, entity_ff_size=16, entity_embedding_size=16,
            embedded_entity_size=16, scatter_channels=2, spatial_stem_channels=4, spatial_downsample_channels=(8, 8),
            spatial_resblocks=1, embedded_spatial_size=16, embedded_scalar_size=16, scalar_context_size=8,
            lstm_size=16, action_type_hidden=16, action_type_resblocks=1, autoregressive_embedding_size=16,
            delay_hidden=8, queue_hidden=8, unit_key_size=8, selected_units_lstm_size=8, func_embed_size=8,
            value_hidden=8, value_resblocks=1)
