"""`klent serve`: the HTTP/JSON API and the web page (FastAPI on uvicorn).

    klent serve                                  # http://127.0.0.1:8000/ with the models in weights/
    klent serve --host 0.0.0.0 --port 8000 --models /models
    klent serve --precision int8                 # each <game>.int8.onnx beside <game>.onnx (`klent quantize`)
    KLENT_API_KEYS=key1,key2 klent serve         # /v1 requires one of the keys

One process serves every model: request batching merges the network calls of concurrent
requests, which only works inside one process, so there is no --workers option.
"""

from __future__ import annotations

import argparse

from klent.cli import add_device, check_device
from klent.engine.player import DEFAULT_WEIGHTS_DIR


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from klent.engine.network import PRECISIONS
    from klent.server.app import ServerConfig

    defaults = ServerConfig()
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument(
        "--models", default=str(DEFAULT_WEIGHTS_DIR), help="folder of <game>.onnx models (default weights/)"
    )
    limits = parser.add_argument_group("limits per request")
    limits.add_argument("--default-simulations", type=int, default=defaults.default_simulations,
                        help="simulations of a search that names no budget (default %(default)s)")
    limits.add_argument("--max-simulations", type=int, default=defaults.max_simulations,
                        help="most simulations a request may ask for (default %(default)s)")
    limits.add_argument("--max-time", type=float, default=defaults.max_time,
                        help="longest search in seconds; every search is capped by it (default %(default)s)")
    limits.add_argument("--max-body-bytes", type=int, default=defaults.max_body_bytes,
                        help="largest request body (default %(default)s)")
    limits.add_argument("--read-timeout", type=float, default=defaults.read_timeout,
                        help="seconds a client has to send a request's headers, and again its body "
                             "(default %(default)s)")
    limits.add_argument("--max-searches", type=int, default=defaults.max_searches,
                        help="searches answered at once; more get 503 (default %(default)s)")
    limits.add_argument("--max-concurrency", type=int, default=defaults.max_concurrency,
                        help="requests without a search (reactive moves, analyses, positions) answered "
                             "at once; more get 503 (default %(default)s)")
    batching = parser.add_argument_group("network batching")
    batching.add_argument("--max-batch", type=int, default=defaults.max_batch,
                          help="most positions per network call; 1 turns batching off (default %(default)s)")
    batching.add_argument("--batch-wait-ms", type=float, default=defaults.batch_wait * 1000,
                          help="longest wait for a batch to fill, in ms (default %(default)s)")
    batching.add_argument("--threads", type=int, default=None, help="ONNX Runtime intra-op threads, 1 to 64")
    add_device(batching)
    batching.add_argument("--precision", choices=PRECISIONS, default=defaults.precision,
                          help="int8 plays each model's quantized sibling <game>.int8.onnx, made by "
                          "`klent quantize` (default: %(default)s)")
    parser.add_argument("--access-log", action="store_true", help="log every request")


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    import uvicorn

    from klent.cli import CommandError
    from klent.engine.network import MAX_THREADS
    from klent.server.app import ServerConfig, api_keys_from_env, create_app
    from klent.server.connections import KEEP_ALIVE_SECONDS, with_read_timeout

    if not 1 <= args.port <= 65535:  # uvicorn would bind the port number modulo 65536
        raise CommandError(f"--port must be between 1 and 65535, got {args.port}")
    if args.threads is not None and not 1 <= args.threads <= MAX_THREADS:
        raise CommandError(f"--threads must be between 1 and {MAX_THREADS}, got {args.threads}")
    check_device(args.device)
    config = ServerConfig(
        models_dir=Path(args.models),
        default_simulations=args.default_simulations,
        max_simulations=args.max_simulations,
        max_time=args.max_time,
        max_body_bytes=args.max_body_bytes,
        read_timeout=args.read_timeout,
        max_concurrency=args.max_concurrency,
        max_searches=args.max_searches,
        max_batch=args.max_batch,
        batch_wait=args.batch_wait_ms / 1000,
        threads=args.threads,
        precision=args.precision,
        device=args.device,
        api_keys=api_keys_from_env(),
    )
    app = create_app(config)
    for game, reason in sorted(app.state.service.registry.failed.items()):
        print(f"klent serve: not serving {game} (503): {reason}", file=sys.stderr, flush=True)
    models = app.state.service.registry.models
    games = ", ".join(sorted(models))
    providers = ", ".join(sorted({served.providers[0] for served in models.values()}))  # where the networks run
    host = f"[{args.host}]" if ":" in args.host else args.host
    keys = f"; API keys required ({len(config.api_keys)})" if config.api_keys else ""
    print(f"klent serve: http://{host}:{args.port}/ playing {games} on {providers} (API docs at /docs{keys})",
          flush=True)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="info",
        access_log=args.access_log,
        http=with_read_timeout(config.read_timeout),
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        # A search never runs longer than max_time, so requests in flight finish within this.
        timeout_graceful_shutdown=int(config.max_time) + 5,
    )
    return 0
