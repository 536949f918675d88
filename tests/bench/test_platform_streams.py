"""bench.platform.streams: a write's event is the first one that shows it, whatever its
``id`` (other writes bump the version without an event); one before the ``201`` is 0 ms."""

from __future__ import annotations

import json

from bench.platform import streams
from bench.platform.streams import events_in


def event_block(version: int, leader: str, completed: int) -> bytes:
    top = [{"Rank": 1, "TeamId": leader, "Name": "n", "Score": 9, "TasksCompleted": completed}]
    head = b"event: leaderboard\nid: " + str(version).encode()
    return head + b"\ndata: " + json.dumps(top).encode()


def held(org: int, *events: tuple[float, str, int]) -> streams.Stream:
    stream = streams.Stream(org=org)
    stream.events.extend(events)
    return stream


def chunk(payload: bytes) -> bytes:
    return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"


def test_events_are_found_in_a_chunked_body_split_anywhere() -> None:
    body = (
        chunk(event_block(7, "t-1", 21) + b"\n\n")
        + chunk(b": heartbeat\n\n")
        + chunk(event_block(8, "t-2", 3) + b"\n\n")
    )
    for split in range(1, len(body)):
        found, rest = events_in(body[:split])
        more, rest = events_in(rest + body[split:])
        assert [streams._leader(b) for b in found + more] == [("t-1", 21), ("t-2", 3)], split
        assert len(rest) <= len(streams.EVENT)
    heartbeats = chunk(b": heartbeat\n\n") * 1000
    assert events_in(heartbeats) == ([], heartbeats[-len(streams.EVENT) :])  # kept short


def test_an_event_is_read_as_its_leader() -> None:
    assert streams._leader(event_block(7, "t-1", 21)) == ("t-1", 21)
    assert streams._leader(b"event: leaderboard\nid: 1\ndata: []") == ("", 0)


def test_the_first_event_showing_the_write_counts() -> None:
    write = streams.Done(org=1, sent=10.0, answered=10.2, team_id="lead", completed=21)
    stream = held(
        1,
        (9.0, "lead", 21),  # before the write was sent: another write's, not this one
        (10.1, "lead", 20),  # after it was sent, but not showing it
        (10.5, "lead", 21),
        (11.0, "lead", 22),
    )
    found = streams.arrivals([stream], [write])
    assert found.missed == 0
    assert found.before_201 == 0
    assert [round(ms) for ms in found.latencies_ms] == [300]


def test_an_event_before_the_201_is_0_ms_and_a_stream_without_one_is_missed() -> None:
    write = streams.Done(org=1, sent=10.0, answered=10.2, team_id="lead", completed=21)
    early = held(1, (10.1, "lead", 21))
    silent = held(1, (10.9, "other", 30))
    elsewhere = held(2, (10.1, "lead", 21))
    found = streams.arrivals([early, silent, elsewhere], [write])
    assert found.latencies_ms == [0.0]
    assert found.before_201 == 1
    assert found.missed == 1
    summary = streams.write_to_event(found, writes=1, refused=0)
    assert summary["before_201"] == 1
    assert summary["samples"] == 1
    assert summary["missed"] == 1
