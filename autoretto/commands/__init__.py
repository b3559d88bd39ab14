"""The command modules of the `autoretto` app, one per concept; each exposes `register(app)`."""
