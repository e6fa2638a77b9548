"""The HTTP/JSON API and the web page, on top of `engine.player`."""
