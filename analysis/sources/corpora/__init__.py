"""Offline input corpora: documents, images and speech clips that installed packages ship."""
