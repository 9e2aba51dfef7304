"""Reproductions of published experiments (`iolab paper NAME`)."""
