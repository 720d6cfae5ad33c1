"""Verified downloads against a local HTTP server on 127.0.0.1 (good, corrupted, truncated files)."""

import hashlib
import threading
import typing
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from dpfair.datasets import DataIntegrityError, DataUnavailableError, RemoteFile, fetch_file

PAYLOAD = b"score,group\n" + b"0.5,a\n" * 5000
DIGEST = hashlib.sha256(PAYLOAD).hexdigest()


class Handler(BaseHTTPRequestHandler):
    hits: typing.ClassVar[dict[str, int]] = {}

    def log_message(self, *args):
        pass

    def do_GET(self):
        Handler.hits[self.path] = Handler.hits.get(self.path, 0) + 1
        if self.path == "/good.csv":
            body, length = PAYLOAD, len(PAYLOAD)
        elif self.path == "/corrupt.csv":
            body = PAYLOAD.replace(b"0.5", b"0.6", 1)
            length = len(body)
        elif self.path == "/truncated.csv":
            body, length = PAYLOAD[:1000], len(PAYLOAD)  # announces more than it sends
        elif self.path == "/flaky.csv" and Handler.hits[self.path] == 1:
            self.send_error(503)
            return
        elif self.path == "/flaky.csv":
            body, length = PAYLOAD, len(PAYLOAD)
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        self.close_connection = True


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def leftovers(folder):
    return [p.name for p in folder.rglob("*") if p.is_file()]


def test_good_file_is_downloaded_verified_and_reused(server, tmp_path):
    remote = RemoteFile("demo/good.csv", f"{server}/good.csv", (DIGEST,))
    path = fetch_file(remote, tmp_path, backoff=0)
    assert path == tmp_path / "demo/good.csv" and path.read_bytes() == PAYLOAD
    hits = Handler.hits["/good.csv"]
    assert fetch_file(remote, tmp_path, backoff=0) == path and Handler.hits["/good.csv"] == hits  # no second download


def test_corrupted_download_is_refused_and_nothing_is_written(server, tmp_path):
    remote = RemoteFile("demo/corrupt.csv", f"{server}/corrupt.csv", (DIGEST,))
    with pytest.raises(DataIntegrityError) as info:
        fetch_file(remote, tmp_path, backoff=0)
    message = str(info.value)
    assert remote.url in message and "DPFAIR_DATA_HOME" in message and "demo/corrupt.csv" in message
    assert leftovers(tmp_path) == []


def test_truncated_download_is_retried_then_reported(server, tmp_path):
    remote = RemoteFile("demo/truncated.csv", f"{server}/truncated.csv", (DIGEST,))
    before = Handler.hits.get("/truncated.csv", 0)
    with pytest.raises(DataUnavailableError) as info:
        fetch_file(remote, tmp_path, retries=2, backoff=0)
    assert Handler.hits["/truncated.csv"] - before == 3
    assert remote.url in str(info.value) and "DPFAIR_DATA_HOME" in str(info.value)
    assert leftovers(tmp_path) == []


def test_transient_error_is_retried(server, tmp_path):
    remote = RemoteFile("demo/flaky.csv", f"{server}/flaky.csv", (DIGEST,))
    assert fetch_file(remote, tmp_path, retries=2, backoff=0).read_bytes() == PAYLOAD


def test_corrupted_local_file_and_missing_file_without_download(tmp_path):
    remote = RemoteFile("demo/local.csv", "http://127.0.0.1:9/never", (DIGEST,))
    with pytest.raises(DataUnavailableError, match="DPFAIR_DATA_HOME"):
        fetch_file(remote, tmp_path, download=False)
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo/local.csv").write_bytes(b"not it")
    with pytest.raises(DataIntegrityError, match="sha256"):
        fetch_file(remote, tmp_path)


def test_data_home_prefers_the_environment(monkeypatch, tmp_path):
    from dpfair.datasets import _download, get_data_home

    monkeypatch.setattr(_download, "saved_data_home_file", lambda: tmp_path / "no-setting")
    monkeypatch.setenv("DPFAIR_DATA_HOME", str(tmp_path))
    assert get_data_home() == tmp_path
    monkeypatch.delenv("DPFAIR_DATA_HOME")
    assert get_data_home().name == "dpfair"


def test_corrupt_local_file_error_names_the_file_digests_and_fix(tmp_path):
    remote = RemoteFile("demo/local.csv", "http://127.0.0.1:9/never", (DIGEST,))
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo/local.csv").write_bytes(b"not it")
    with pytest.raises(DataIntegrityError) as info:
        fetch_file(remote, tmp_path)
    error = info.value
    assert error.path == tmp_path / "demo/local.csv" and error.expected == (DIGEST,) and error.actual != DIGEST
    assert DIGEST in str(error) and "move it aside" in error.fix and "dpfair data fetch" in error.fix
    assert (tmp_path / "demo/local.csv").read_bytes() == b"not it"
    import pickle

    again = pickle.loads(pickle.dumps(error))
    assert again.path == error.path and again.fix == error.fix and str(again) == str(error)
