"""``python -m inference.server``: serve one GGUF model in a prefill, decode or both role.

Reads the command line (and ``GRADER_SERVER_TOKEN``), refuses to listen beyond
loopback without a token, binds the socket itself (``--port 0``: any free port) and
logs ``listening on http://HOST:PORT`` to stderr before serving.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import socket
import sys
from pathlib import Path

from ..errors import ConfigError
from .options import SERVER_ROLES, ServerOptions

log = logging.getLogger("inference.server")
TOKEN_ENV = "GRADER_SERVER_TOKEN"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m inference.server",
                                description="Serve a GGUF model for prefill/decode over HTTP "
                                            "(docs/server-protocol.md).")
    d = ServerOptions()
    p.add_argument("--model", default=d.model,
                   help="a built-in model name or a path to a GGUF file (default %(default)s)")
    p.add_argument("--role", choices=SERVER_ROLES, default=d.role)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8090, help="0: any free port")
    p.add_argument("--token-file", type=Path,
                   help=f"file holding the bearer token (or set {TOKEN_ENV})")
    p.add_argument("--slots", type=int, default=d.slots)
    p.add_argument("--queue", type=int, default=d.queue)
    p.add_argument("--decode-batch", type=int, default=d.decode_batch,
                   help="replies decoded together, one llama_decode per step for all "
                        "(continuous batching; 1: each in its slot) (default %(default)s)")
    p.add_argument("--n-ctx", type=int, default=None, help="default: the model's")
    p.add_argument("--threads", type=int, default=None, help="default: every core")
    p.add_argument("--flash-attn", choices=("on", "off"), default="off",
                   help="sets the V layout of the KV, so it is never 'auto'")
    p.add_argument("--lease-seconds", type=float, default=d.lease_seconds)
    p.add_argument("--kv-store-mb", type=int, default=d.kv_store_mb)
    p.add_argument("--max-kv-mb", type=int, default=d.max_kv_mb)
    p.add_argument("--kv-memory-mb", type=int, default=d.kv_memory_mb,
                   help="KV that decode requests may pull and hold at once; beyond it a "
                        "decode gets 503 (default %(default)s, at least --max-kv-mb)")
    p.add_argument("--prefix-cache-mb", type=int, default=d.prefix_cache_mb)
    p.add_argument("--kv-port", type=int, default=d.kv_port,
                   help="port of the KV data plane (prefill roles): 0 any free port, "
                        "-1 none (KV moves over HTTP only)")
    p.add_argument("--chat-template", default=None,
                   help="'plain', a Jinja chat template, or a file holding one: for a GGUF "
                        "without a template (the server refuses to load one otherwise), "
                        "or in place of the file's")
    p.add_argument("--log-level", default="info",
                   choices=("debug", "info", "warning", "error"))
    return p


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str | None:
    if args.token_file is not None:
        try:
            token = args.token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            parser.error(f"--token-file {args.token_file}: {exc}")
        if not token:
            parser.error(f"--token-file {args.token_file} is empty")
        return token
    return os.environ.get(TOKEN_ENV) or None


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    token = read_token(args, parser)
    if token is None and not is_loopback(args.host):
        parser.error(f"refusing to listen on {args.host} without a token: anyone who can "
                     f"reach it could use the model. Give --token-file or set {TOKEN_ENV}, "
                     "or listen on 127.0.0.1")
    try:
        options = ServerOptions(
            model=args.model, role=args.role, slots=args.slots, queue=args.queue,
            decode_batch=args.decode_batch,
            n_ctx=args.n_ctx, threads=args.threads, flash_attn=args.flash_attn == "on",
            lease_seconds=args.lease_seconds, kv_store_mb=args.kv_store_mb,
            max_kv_mb=args.max_kv_mb, kv_memory_mb=args.kv_memory_mb,
            prefix_cache_mb=args.prefix_cache_mb,
            kv_host=args.host, kv_port=args.kv_port, chat_template=args.chat_template)
    except ConfigError as exc:
        parser.error(str(exc))

    import uvicorn

    from .app import create_app
    from .engine import ServerEngine

    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        log.error("cannot listen on %s:%d: %s", args.host, args.port, exc)
        return 1
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    engine = ServerEngine(options, token=token)
    engine.start()
    config = uvicorn.Config(create_app(engine, token), log_config=None, access_log=False,
                            timeout_graceful_shutdown=5, log_level=args.log_level)
    log.info("listening on http://%s:%d (role %s, model %s)", shown, port, options.role,
             options.model)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        engine.close()
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
