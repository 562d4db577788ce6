"""The citation viewer: one self-contained HTML page per citation, its verdict on top."""
