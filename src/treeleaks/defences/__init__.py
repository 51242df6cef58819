"""Defences a custodian can apply to a tree model before releasing it."""
