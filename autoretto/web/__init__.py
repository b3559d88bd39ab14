"""`autoretto serve`: a small page on the home server for what a person does by hand.

Only `serve` imports the web stack (Starlette, uvicorn, Jinja2: `app.py`); `settings.py` (the
`[serve]` table) and `links.py` (signed review links) are light, so `autoretto review` and the
config stay fast. Everything the page does goes through `actions.py`, which calls the same
library functions as the CLI.
"""

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8780
