"""The HTTP/JSON API and the web page, on top of `klent.engine.player`."""
