"""Tests for ragd.sources.http_client, over ragd.adapters.httpx, against a real local HTTP
server: deadlines, size caps, gzip, content types, redirects, per-host concurrency, errors,
charsets, proxies and cookies."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from ragd.sources.http_client import FetchError, HttpClient, Limits, same_host, shown
from tests.local_http import LocalServer, Reply, local_server

JSON = "application/json"
HTML = "text/html; charset=utf-8"


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with local_server() as running:
        yield running


def client(timeout: float = 2.0, max_bytes: int = 5_000_000, per_host: int = 4) -> HttpClient:
    return HttpClient(Limits(timeout=timeout, max_bytes=max_bytes, per_host=per_host))


def fetch_error(http: HttpClient, url: str, accept: tuple[str, ...] = ("text/plain",)) -> str:
    with pytest.raises(FetchError) as info:
        http.get(url, accept=accept)
    message = str(info.value)
    assert "\n" not in message
    return message


def redirect(to: str) -> Reply:
    return Reply(302, headers={"Location": to})


# --- deadline --------------------------------------------------------------------------------


def test_a_server_that_never_answers_fails_within_the_deadline(server: LocalServer) -> None:
    server.route("/hang", Reply(body=b"late", delay=10))
    # Waited for, the answer would come after 10 s and succeed: the failure is the deadline's.
    fetch_error(client(timeout=0.3), server.url("/hang"))


def test_a_body_that_trickles_past_the_deadline_fails_within_it(server: LocalServer) -> None:
    # Every byte comes well within the socket timeout; only the whole-request deadline
    # can stop a body that would take ten seconds.
    server.route("/trickle", Reply(body=b"x" * 200, trickle=0.05))
    message = fetch_error(client(timeout=0.4), server.url("/trickle"))
    assert "took longer than 0.4 s" in message


def test_headers_that_trickle_past_the_deadline_fail_within_it(server: LocalServer) -> None:
    # Each read of the status line and headers comes within the read timeout: only the
    # deadline's watch on the socket ends this one.
    headers = b"HTTP/1.1 200 OK\r\n" + b"X-Padding: " + b"p" * 400 + b"\r\n\r\n"
    server.route("/slow-headers", Reply(raw=headers, trickle=0.02))
    fetch_error(client(timeout=0.4), server.url("/slow-headers"))


def test_a_body_cut_short_of_its_content_length_is_refused(server: LocalServer) -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n"
    server.route("/cut", Reply(raw=answer + b"only ten b"))
    assert "ended 90 bytes early" in fetch_error(client(), server.url("/cut"))


def test_a_body_that_arrives_within_the_deadline_is_read(server: LocalServer) -> None:
    server.route("/steady", Reply(body=b"abcde", trickle=0.02))
    assert client(timeout=2).get(server.url("/steady"), accept=("text/plain",)).data == b"abcde"


# --- size caps -------------------------------------------------------------------------------


def test_a_body_over_the_size_cap_is_refused(server: LocalServer) -> None:
    server.route("/big", Reply(body=b"x" * 1001))
    message = fetch_error(client(max_bytes=1000), server.url("/big"))
    assert "the body exceeds 1000 bytes" in message


def test_a_body_at_the_size_cap_is_read(server: LocalServer) -> None:
    server.route("/full", Reply(body=b"x" * 1000))
    fetched = client(max_bytes=1000).get(server.url("/full"), accept=("text/plain",))
    assert len(fetched.data) == 1000


def test_a_gzip_file_is_inflated_and_taken_as_the_accepted_type(server: LocalServer) -> None:
    body = gzip.compress(b"<urlset/>")
    server.route("/s.xml.gz", Reply(body=body, content_type="application/gzip"))
    fetched = client().get(server.url("/s.xml.gz"), accept=("application/xml", "text/xml"))
    assert fetched.data == b"<urlset/>"
    assert fetched.content_type == "application/xml"


def test_a_gzip_bomb_is_refused_by_what_it_inflates_to(server: LocalServer) -> None:
    bomb = gzip.compress(b"\0" * 10_000_000)
    assert len(bomb) < 100_000
    server.route("/bomb", Reply(body=bomb, content_type="application/gzip"))
    message = fetch_error(client(max_bytes=100_000), server.url("/bomb"), ("application/xml",))
    assert "inflates past 100000 bytes" in message


def test_a_gzip_encoded_bomb_is_refused_by_what_it_inflates_to(server: LocalServer) -> None:
    bomb = gzip.compress(b"[" + b" " * 10_000_000 + b"]")
    server.route("/bomb", Reply(body=bomb, content_type=JSON, headers={"Content-Encoding": "gzip"}))
    with pytest.raises(FetchError, match="inflates past 100000 bytes"):
        client(max_bytes=100_000).get_json(server.url("/bomb"))


def test_a_corrupt_gzip_body_is_refused(server: LocalServer) -> None:
    server.route("/bad.gz", Reply(body=b"\x1f\x8bnot gzip", content_type="application/gzip"))
    message = fetch_error(client(), server.url("/bad.gz"), ("application/xml",))
    assert "the gzip body is corrupt" in message


# --- content types ---------------------------------------------------------------------------


def test_html_where_json_is_expected_is_refused(server: LocalServer) -> None:
    server.route("/api", Reply(body=b"<html>login</html>", content_type=HTML))
    with pytest.raises(FetchError, match="unexpected content type 'text/html'"):
        client().get_json(server.url("/api"))


def test_gzip_encoded_html_where_json_is_expected_is_refused(server: LocalServer) -> None:
    body = gzip.compress(b"<html>login</html>")
    server.route("/api", Reply(body=body, content_type=HTML, headers={"Content-Encoding": "gzip"}))
    with pytest.raises(FetchError, match="unexpected content type 'text/html'"):
        client().get_json(server.url("/api"))


def test_gzip_encoded_json_is_inflated_and_parsed(server: LocalServer) -> None:
    body = gzip.compress(b'{"id": 1}')
    server.route("/api", Reply(body=body, content_type=JSON, headers={"Content-Encoding": "gzip"}))
    assert client().get_json(server.url("/api")) == {"id": 1}


def test_json_with_a_vendor_type_is_parsed(server: LocalServer) -> None:
    ctype = "application/vnd.contentful.delivery.v1+json"
    server.route("/api", Reply(body=b'{"items": []}', content_type=ctype))
    assert client().get_json(server.url("/api")) == {"items": []}


def test_a_json_type_with_a_body_that_is_not_json_is_refused(server: LocalServer) -> None:
    server.route("/api", Reply(body=b"{not json", content_type=JSON))
    with pytest.raises(FetchError, match="the answer is not valid JSON"):
        client().get_json(server.url("/api"))


def test_a_url_that_is_not_http_is_refused_without_a_request() -> None:
    assert "not an http(s) URL" in fetch_error(client(), "file:///etc/passwd")


# --- redirects -------------------------------------------------------------------------------


def test_a_redirect_on_the_same_host_is_followed(server: LocalServer) -> None:
    server.route("/old", redirect("/new"))
    server.route("/new", Reply(body=b"moved here"))
    fetched = client().get(server.url("/old"), accept=("text/plain",))
    assert fetched.data == b"moved here"
    assert fetched.url == server.url("/new")


def test_a_redirect_to_another_host_is_refused(server: LocalServer) -> None:
    # "localhost" is the same server under another name: to the client, another host.
    server.route("/old", redirect(server.url("/internal?token=s3cret", host="localhost")))
    server.route("/internal", Reply(body=b"secrets"))
    message = fetch_error(client(), server.url("/old"))
    assert "redirected off the host" in message
    assert "s3cret" not in message
    assert server.hits("/internal") == 0


def test_a_redirect_to_another_port_on_the_same_host_is_refused(server: LocalServer) -> None:
    server.route("/old", redirect("http://127.0.0.1:6379/"))
    assert "redirected off the host" in fetch_error(client(), server.url("/old"))


@pytest.mark.parametrize(
    ("url", "other", "same"),
    [
        ("http://docs.example.com/a", "https://docs.example.com/b", True),
        ("https://docs.example.com:8443/a", "https://docs.example.com:8443/b", True),
        ("https://docs.example.com/a", "https://docs.example.com:443/b", True),
        ("https://docs.example.com/a", "https://docs.example.com:6379/b", False),
        ("http://docs.example.com:8080/a", "http://docs.example.com/b", False),
        ("https://docs.example.com/a", "https://evil.example.com/a", False),
        ("https://docs.example.com/a", "https://docs.example.com:x/a", False),
    ],
)
def test_same_host_means_the_same_name_and_port(url: str, other: str, same: bool) -> None:
    assert same_host(url, other) is same


def test_a_redirect_to_another_scheme_is_refused(server: LocalServer) -> None:
    server.route("/old", redirect(f"ftp://127.0.0.1:{server.port}/file"))
    assert "redirected off the host" in fetch_error(client(), server.url("/old"))


def test_five_redirects_are_followed(server: LocalServer) -> None:
    for step in range(5):
        server.route(f"/r{step}", redirect(f"/r{step + 1}"))
    server.route("/r5", Reply(body=b"end"))
    assert client().get(server.url("/r0"), accept=("text/plain",)).data == b"end"


def test_a_sixth_redirect_is_refused(server: LocalServer) -> None:
    for step in range(6):
        server.route(f"/r{step}", redirect(f"/r{step + 1}"))
    server.route("/r6", Reply(body=b"end"))
    with pytest.raises(FetchError) as info:
        client().get(server.url("/r0"), accept=("text/plain",))
    assert not info.value.gone
    assert "more than 5 redirects" in str(info.value)
    assert server.hits("/r6") == 0


# --- concurrency -----------------------------------------------------------------------------


def test_requests_to_one_host_never_exceed_the_per_host_limit(server: LocalServer) -> None:
    server.route("/slow", Reply(body=b"ok", delay=0.15))
    http = client(per_host=2)
    with ThreadPoolExecutor(max_workers=6) as pool:
        bodies = list(
            pool.map(lambda _: http.get(server.url("/slow"), accept=("text/plain",)).data, range(6))
        )
    assert bodies == [b"ok"] * 6
    assert server.most_in_flight == 2


def test_each_host_has_its_own_concurrency_limit(server: LocalServer) -> None:
    server.route("/slow", Reply(body=b"ok", delay=0.3))
    http = client(per_host=1)
    urls = [server.url("/slow"), server.url("/slow", host="localhost")]
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda url: http.get(url, accept=("text/plain",)), urls))
    assert server.most_in_flight == 2


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [404, 410])
def test_not_found_and_gone_are_gone(server: LocalServer, status: int) -> None:
    server.route("/missing", Reply(status, b"no such page"))
    with pytest.raises(FetchError) as info:
        client().get(server.url("/missing"), accept=("text/plain",))
    assert info.value.gone
    assert info.value.status == status


def test_a_server_error_is_not_gone(server: LocalServer) -> None:
    server.route("/broken", Reply(500, b"oops"))
    with pytest.raises(FetchError) as info:
        client().get(server.url("/broken"), accept=("text/plain",))
    assert not info.value.gone
    assert info.value.status == 500
    assert str(info.value) == f"GET {server.url('/broken')}: HTTP 500"


def test_an_error_message_never_shows_the_query(server: LocalServer) -> None:
    server.route("/api", Reply(401, b"bad key"))
    message = fetch_error(client(), server.url("/api?key=s3cret&page=2"))
    assert "s3cret" not in message
    assert server.url("/api") in message


def test_a_refused_connection_is_a_fetch_error_without_a_status() -> None:
    with local_server() as gone:
        url = gone.url("/x")
    with pytest.raises(FetchError) as info:
        client().get(url, accept=("text/plain",))
    assert info.value.status is None
    assert not info.value.gone


def test_shown_drops_the_query_and_fragment() -> None:
    url = "https://cms.example.com/api/entries?access_token=s3cret#top"
    assert shown(url) == "https://cms.example.com/api/entries"


# --- headers and charsets --------------------------------------------------------------------


def test_the_clients_headers_are_sent(server: LocalServer) -> None:
    server.route("/api", Reply(body=b"{}", content_type=JSON))
    HttpClient(Limits(), {"Authorization": "Bearer t0ken"}).get_json(server.url("/api"))
    sent = server.seen[0].headers
    assert sent["Authorization"] == "Bearer t0ken"
    assert sent["User-Agent"] == "ragd"


@pytest.mark.parametrize(
    ("content_type", "body", "text"),
    [
        ("text/html; charset=iso-8859-1", "café".encode("latin-1"), "café"),
        ("text/html; charset=utf-8", "café".encode(), "café"),
        ("text/html", "café".encode(), "café"),
        ("text/html; charset=no-such-charset", "café".encode(), "café"),
        ("text/html; charset=utf-8", b"caf\xe9", "caf\ufffd"),
    ],
)
def test_text_decodes_by_the_declared_charset(
    server: LocalServer, content_type: str, body: bytes, text: str
) -> None:
    server.route("/page", Reply(body=body, content_type=content_type))
    assert client().get(server.url("/page"), accept=("text/html",)).text() == text


def test_an_answer_that_is_not_http_is_a_fetch_error(server: LocalServer) -> None:
    server.route("/junk", Reply(raw=b"SSH-2.0-OpenSSH_9.6\r\n\r\n"))
    assert fetch_error(client(), server.url("/junk")).startswith(f"GET {server.url('/junk')}: ")


def test_a_body_cut_off_inside_a_chunk_is_a_fetch_error(server: LocalServer) -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
    server.route("/cut", Reply(raw=head + b"a\r\nonly"))
    fetch_error(client(), server.url("/cut"))


def test_gzip_is_the_encoding_asked_for(server: LocalServer) -> None:
    server.route("/page", Reply(body=b"plain"))
    client().get(server.url("/page"), accept=("text/plain",))
    assert server.seen[0].headers["Accept-Encoding"] == "gzip"


def test_a_cookie_the_server_sets_is_never_sent_back(server: LocalServer) -> None:
    server.route("/login", Reply(body=b"hi", headers={"Set-Cookie": "session=abc; Path=/"}))
    server.route("/page", Reply(body=b"page"))
    http = client()
    http.get(server.url("/login"), accept=("text/plain",))
    http.get(server.url("/page"), accept=("text/plain",))
    assert "Cookie" not in server.seen[1].headers


def test_the_deadline_spans_every_redirect(server: LocalServer) -> None:
    # Each hop answers well within the deadline; together they do not.
    for step in range(4):
        server.route(f"/r{step}", Reply(302, headers={"Location": f"/r{step + 1}"}, delay=0.2))
    server.route("/r4", Reply(body=b"end"))
    assert "took longer than 0.5 s" in fetch_error(client(timeout=0.5), server.url("/r0"))
    assert server.hits("/r4") == 0


# --- proxies ---------------------------------------------------------------------------------


def test_requests_go_through_the_proxy_of_the_environment(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The local server stands in for the proxy: the site's name is never looked up here.
    monkeypatch.setenv("HTTP_PROXY", server.url(""))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    server.route("/page", Reply(body=b"via the proxy"))
    fetched = client().get("http://docs.example.invalid/page", accept=("text/plain",))
    assert fetched.data == b"via the proxy"
    assert server.seen[0].headers["Host"] == "docs.example.invalid"


def test_a_host_in_no_proxy_is_reached_directly(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with local_server() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url(""))
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        server.route("/page", Reply(body=b"direct"))
        assert client().get(server.url("/page"), accept=("text/plain",)).data == b"direct"
        assert proxy.seen == []
