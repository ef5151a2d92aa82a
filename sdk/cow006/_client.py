"""A small client of an arena's HTTP API, for ``cow006 login/submit/status/logs/replay/token``.

Standard library only (``urllib``), like the rest of the SDK: JSON requests with a bearer
token, a hand-built ``multipart/form-data`` upload, timeouts on every request, and one typed
error, ``ClientError``, whose message is one sentence: the API's ``{"detail": ...}`` (a
sentence, an object with a ``message``, or FastAPI's list of validation errors) or what went
wrong on the network ("cannot reach http://...: connection refused").

Credentials (the arena's URL, the API token, the user's name) are kept in a JSON file:
``$COW006_CONFIG``, else ``${XDG_CONFIG_HOME:-~/.config}/cow006/credentials.json``, written
atomically with mode 0600.  ``COW006_URL`` and ``COW006_TOKEN`` override what the file says.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import os
import socket
import stat
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import uuid
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._errors import Cow006Error

DEFAULT_TIMEOUT = 30.0  # seconds per blocking read or write of a request (uploads: 20 MiB at most)
CONFIG_ENV = "COW006_CONFIG"
URL_ENV = "COW006_URL"
TOKEN_ENV = "COW006_TOKEN"
PAGE_SIZE = 200  # the API's largest page (settings.max_page_size)
MAX_PAGES = 50  # a bound on paging through any one list: 10,000 items
# Entries of a folder that never belong in an upload (and that the arena would refuse:
# hidden names) are left out when a folder is zipped.
SKIPPED_DIRS = frozenset({"__pycache__", "node_modules"})
# A fixed timestamp for zip entries: zipping the same folder twice gives the same bytes, so
# the arena recognizes an unchanged bot as a duplicate of the version it already has.
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


class ClientError(Cow006Error):
    """A request that failed: ``status`` is the HTTP status (None for a network error),
    ``detail`` the API's raw ``detail`` (a string, an object or a list), if it sent one, and
    ``retry_after`` the seconds a refusal asked to wait (429), if it said."""

    def __init__(self, message: str, *, status: int | None = None, detail: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail
        self.retry_after: float | None = None


def _seconds(value: str | None) -> float | None:
    """A ``Retry-After`` of whole seconds (what the arena sends), else None."""
    if value is None or not value.strip().isdigit() or len(value.strip()) > 6:
        return None
    return float(value.strip())


def normalize_url(url: str) -> str:
    """The arena's base URL: http(s), no trailing slash, without a trailing ``/api``."""
    text = url.strip()
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ClientError(f"the arena URL must look like http://host:port, not {url!r}")
    path = parts.path.rstrip("/")
    if path.endswith("/api"):  # people paste the API's URL as often as the site's
        path = path[: -len("/api")]
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


# --- credentials ----------------------------------------------------------------------------


@dataclass
class Credentials:
    """Where to talk to and as whom; any part may be missing (not logged in)."""

    url: str | None = None
    token: str | None = None
    user: str | None = None


def config_path() -> Path:
    """The credentials file: ``$COW006_CONFIG`` or the XDG config folder's cow006/."""
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / "cow006" / "credentials.json"


def load_credentials() -> Credentials:
    """The saved credentials with the environment's overrides applied."""
    path = config_path()
    saved: dict[str, Any] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise ClientError(f"cannot read {path}: {exc.strerror or exc}") from None
    else:
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError:
            loaded = None
        if not isinstance(loaded, dict):
            raise ClientError(f"{path} is not a credentials file; log in again to replace it")
        saved = loaded
    creds = Credentials(
        url=_str_or_none(saved.get("url")),
        token=_str_or_none(saved.get("token")),
        user=_str_or_none(saved.get("user")),
    )
    if os.environ.get(URL_ENV):
        url = normalize_url(os.environ[URL_ENV])
        if url != creds.url:  # the saved user name belongs to the saved arena only
            creds.user = None
        creds.url = url
    if os.environ.get(TOKEN_ENV):
        if os.environ[TOKEN_ENV] != creds.token:
            creds.user = None
        creds.token = os.environ[TOKEN_ENV]
    return creds


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def save_credentials(url: str, token: str, user: str) -> Path:
    """Write the credentials file atomically, readable by its owner only (0600)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = json.dumps({"url": url, "token": token, "user": user}, indent=2) + "\n"
    # mkstemp creates the file with mode 0600 before a byte of the token is written; the
    # rename then replaces the old file in one step, so a reader never sees half a file.
    fd, tmp = tempfile.mkstemp(prefix=".credentials-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), stat.S_IRUSR | stat.S_IWUSR)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


# --- error sentences ------------------------------------------------------------------------


def detail_message(detail: Any) -> str:
    """One sentence from an API ``detail``: a string, ``{"message": ...}``, or FastAPI's
    list of validation errors (``[{"loc": [...], "msg": ...}, ...]``)."""
    if isinstance(detail, str):
        return detail
    if isinstance(detail, Mapping) and isinstance(detail.get("message"), str):
        return str(detail["message"])
    if isinstance(detail, list) and detail:
        parts = []
        for err in detail[:3]:
            if not isinstance(err, Mapping):
                parts.append(str(err))
                continue
            # loc starts with where the value was ("body", "query", "path"): not useful here.
            loc = [str(x) for x in err.get("loc", []) if x not in ("body", "query", "path")]
            msg = str(err.get("msg", "invalid value"))
            parts.append(f"{'.'.join(loc)}: {msg}" if loc else msg)
        more = f" (and {len(detail) - 3} more)" if len(detail) > 3 else ""
        return "; ".join(parts) + more
    return json.dumps(detail)[:200]


def _network_reason(exc: BaseException, timeout: float) -> str:
    """A few words for a network failure ("connection refused", "timed out after 30 s")."""
    reason: Any = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, TimeoutError):  # socket.timeout is TimeoutError since 3.10
        return f"no answer within {timeout:g} s"
    if isinstance(reason, socket.gaierror):
        return "unknown host"
    if isinstance(reason, http.client.RemoteDisconnected | ConnectionResetError):
        return "the connection was closed without an answer"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror.lower()
    return str(reason) or type(reason).__name__


# --- the client -----------------------------------------------------------------------------


class Client:
    """Requests to one arena, as one user (or anonymously without a token)."""

    def __init__(
        self, url: str, token: str | None = None, *, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.url = normalize_url(url)
        self.token = token
        self.timeout = timeout

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: Mapping[str, Any] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
    ) -> Any:
        """Send one request to ``/api{path}``; the decoded JSON answer (None for 204)."""
        status, _, raw = self.raw(
            method, path, json_body=json_body, params=params, body=body, content_type=content_type
        )
        if status == 204 or not raw:
            return None
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ClientError(
                f"{self.url} answered {method} /api{path} with something other than JSON "
                "(is it a Корова 006 arena?)",
                status=status,
            ) from None

    def raw(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: Mapping[str, Any] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        accept: str = "application/json",
    ) -> tuple[int, Mapping[str, str], bytes]:
        """Send one request to ``/api{path}``: its status, headers and body as bytes.  An
        HTTP error is a ClientError with the arena's one-sentence reason."""
        url = f"{self.url}/api{path}"
        query = {k: v for k, v in (params or {}).items() if v is not None}
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = {"Accept": accept, "User-Agent": "cow006-client"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if json_body is not None:
            body = json.dumps(json_body).encode()
            content_type = "application/json"
        if content_type:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(url, data=body, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as exc:
            with exc:
                raw = exc.read()
                retry_after = exc.headers.get("Retry-After")
            error = self._http_error(method, path, exc.code, raw)
            error.retry_after = _seconds(retry_after)
            raise error from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            reason = _network_reason(exc, self.timeout)
            raise ClientError(f"cannot reach {self.url}: {reason}") from None

    def _http_error(self, method: str, path: str, status: int, raw: bytes) -> ClientError:
        try:
            payload = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            payload = None
        if not isinstance(payload, dict) or "detail" not in payload:
            # Not the arena's JSON error: a proxy's page, another server, a wrong URL.
            return ClientError(
                f"{self.url} answered {method} /api{path} with HTTP {status} "
                "(is it a Корова 006 arena?)",
                status=status,
            )
        detail = payload["detail"]
        message = detail_message(detail)
        if status == 401:
            # A stale or mistyped token: say how to get a good one.
            message += f" (the arena at {self.url} refused the token; log in again with: "
            message += f"cow006 login {self.url})"
        return ClientError(message, status=status, detail=detail)

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, json_body=body)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)

    # The caller's API tokens (``cow006 token``): a secret is only in create's and rotate's
    # answers; lists hold names, prefixes and dates.

    def tokens(self, *, revoked: bool = False) -> list[dict[str, Any]]:
        """The caller's tokens (live ones; with ``revoked``, revoked and expired ones too)."""
        params = {"revoked": "true"} if revoked else {}
        return list(self.get("/users/me/tokens", **params)["items"])

    def create_token(self, name: str, expires_days: int | None = None) -> dict[str, Any]:
        """A new token of the caller; the answer's ``token`` is its secret, shown this once."""
        body: dict[str, Any] = {"name": name}
        if expires_days is not None:
            body["expires_days"] = expires_days
        return dict(self.post("/users/me/tokens", body))

    def revoke_token(self, token_id: int) -> None:
        self.delete(f"/users/me/tokens/{int(token_id)}")

    def rotate_token(self, token_id: int) -> dict[str, Any]:
        """Replace a token by a new one of the same name; the answer holds the new secret."""
        return dict(self.request("POST", f"/users/me/tokens/{int(token_id)}/rotate"))

    def pages(self, path: str, **params: Any) -> Iterator[Any]:
        """Every item of a paged list (``{"items", "total", ...}``), a page at a time."""
        offset = 0
        for _ in range(MAX_PAGES):
            page = self.get(path, limit=PAGE_SIZE, offset=offset, **params)
            items = page.get("items", [])
            yield from items
            offset += len(items)
            if not items or offset >= int(page.get("total", 0)):
                return

    def upload(self, path: str, filename: str, data: bytes, field: str = "file") -> Any:
        """POST one file as ``multipart/form-data`` (built here: urllib has no encoder)."""
        boundary = f"cow006-{uuid.uuid4().hex}"
        # The file name is sent as given; callers pass a plain name (see upload_name).
        head = (
            f"--{boundary}\r\n"
            f'Content-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        body = head + data + f"\r\n--{boundary}--\r\n".encode()
        return self.request(
            "POST", path, body=body, content_type=f"multipart/form-data; boundary={boundary}"
        )


# --- what to upload -------------------------------------------------------------------------


def _plain_name(name: str, fallback: str) -> str:
    """``name`` if the arena accepts it as a file name (letters, digits, ``_.-``), else
    ``fallback``: the arena stores a .py upload as bot.py whatever it was called."""
    ok = name and name[0] != "." and len(name) <= 64
    ok = ok and all(c.isascii() and (c.isalnum() or c in "_.-") for c in name)
    return name if ok else fallback


def bot_upload(path: Path) -> tuple[str, bytes]:
    """(file name, bytes) to upload for a bot: a ``.py`` file as it is, a ``.zip`` as it
    is, a folder zipped here with its files at the archive's root (it must hold bot.py)."""
    if path.is_dir():
        if not (path / "bot.py").is_file():
            raise ClientError(f"{path} has no bot.py: a bot folder needs bot.py at its top")
        return _plain_name(f"{path.resolve().name}.zip", "bot.zip"), zip_folder(path)
    if not path.is_file():
        raise ClientError(f"no such file or folder: {path}")
    suffix = path.suffix.lower()
    if suffix not in (".py", ".zip"):
        raise ClientError(f"{path} is not a bot: submit a .py file, a .zip or a folder")
    return _plain_name(path.name, "bot" + suffix), path.read_bytes()


def zip_folder(folder: Path) -> bytes:
    """A deterministic zip of a folder's regular files (hidden ones and caches left out)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for file in _folder_files(folder, folder):
            info = zipfile.ZipInfo(file.relative_to(folder).as_posix(), date_time=ZIP_EPOCH)
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, file.read_bytes())
    return buf.getvalue()


def _folder_files(root: Path, folder: Path) -> Iterator[Path]:
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or entry.is_symlink():
            continue  # the arena refuses hidden names and links; never follow a link out
        if entry.is_dir():
            if entry.name not in SKIPPED_DIRS:
                yield from _folder_files(root, entry)
        elif entry.is_file() and not entry.name.endswith(".pyc"):
            yield entry
