"""Keyword-to-question synthetic data (Ding & Balog 2018): data, keyword generation, protocol."""
