"""POST /team/bulk with text/csv: spreadsheet files as they come, problems named by line."""

from __future__ import annotations

from typing import Any

import pytest

from tests.bulk.factories import csv_text, fields_of, post_csv, team_names
from tests.factories import Org, World

pytestmark = pytest.mark.anyio


async def members_of(org: Org) -> list[dict[str, Any]]:
    response = await org.client.get("/member", headers=org.admin)
    assert response.status_code == 200
    return list(response.json())


async def test_a_spreadsheet_export_with_bom_crlf_quotes_and_unicode(world: World) -> None:
    org = world.org()
    body = (
        "\ufeffteam,email,givenName,tags\r\n"
        '"Comets, Inc.",ada@example.org,Ada,"onboarding;2026"\r\n'
        '"Comets, Inc.",grace@example.org,"Grace ""Amazing"" Hopper",mentors\r\n'
        "\r\n"
        ",,,\r\n"
        'Équipe 東京,zoë@bücher.de,"Zoë Müller",\r\n'
        "Declared only,,,solo\r\n"
    )
    response = await post_csv(org, body.encode("utf-8"))
    assert response.status_code == 201, response.text
    created = response.json()
    assert [t["Name"] for t in created] == ["Comets, Inc.", "Équipe 東京", "Declared only"]
    assert [t["MemberCount"] for t in created] == [2, 1, 0]
    assert created[0]["Tags"] == ["onboarding", "2026", "mentors"]
    assert created[2]["Tags"] == ["solo"]
    by_email = {m["Email"]: m for m in await members_of(org)}
    assert by_email["grace@example.org"]["GivenName"] == 'Grace "Amazing" Hopper'
    assert by_email["zoë@bücher.de"]["GivenName"] == "Zoë Müller"
    assert by_email["ada@example.org"]["TeamIds"] == [created[0]["Id"]]


async def test_members_are_found_by_email_ignoring_case_and_shared_between_teams(
    world: World,
) -> None:
    org = world.org()
    existing = await org.create_member("Ada@Example.org")
    count_before = len(await members_of(org))
    rows = [
        ("Red", "ADA@example.ORG", "Somebody Else", "a"),
        ("Blue", "ada@example.org", "Ada", "b"),
        ("red", "new@example.org", "Newcomer", "A;c"),
        ("Red", "NEW@example.org", "Newcomer", ""),
    ]
    response = await post_csv(org, csv_text(rows))
    assert response.status_code == 201, response.text
    red, blue = response.json()
    assert (red["Name"], red["MemberCount"], red["Tags"]) == ("Red", 2, ["a", "c"])
    assert blue["MemberCount"] == 1
    members = {m["Email"].lower(): m for m in await members_of(org)}
    assert len(members) == count_before + 1
    ada = members["ada@example.org"]
    assert ada["Id"] == existing["Id"]
    assert ada["GivenName"] == existing["GivenName"]
    assert {red["Id"], blue["Id"]} <= set(ada["TeamIds"])


async def test_a_new_member_gets_the_given_name_of_its_first_row(world: World) -> None:
    org = world.org()
    rows = [
        ("A", "a@example.org", "Ann", ""),
        ("B", "x@example.org", "Xavier", ""),
        ("A", "X@example.org", "Xav", ""),
    ]
    response = await post_csv(org, csv_text(rows))
    assert response.status_code == 201, response.text
    assert [t["MemberCount"] for t in response.json()] == [2, 1]
    by_email = {m["Email"].lower(): m for m in await members_of(org)}
    assert by_email["x@example.org"]["GivenName"] == "Xavier"
    assert len(by_email["x@example.org"]["TeamIds"]) == 2


async def test_header_names_ignore_case_and_order_and_lf_or_cr_line_ends(world: World) -> None:
    org = world.org()
    lf = "Email,TEAM,tags,givenname\nann@example.org,LF team,x,Ann\n"
    assert (await post_csv(org, lf)).status_code == 201
    cr = "team,email,givenName,tags\rCR team,bob@example.org,Bob,\r"
    response = await post_csv(org, cr)
    assert response.status_code == 201, response.text
    assert await team_names(org) == ["CR team", "LF team"]


@pytest.mark.parametrize(
    "body",
    [
        "name,email,givenName,tags\r\nA,,,\r\n",
        "team,email,givenName\r\nA,,\r\n",
        "team;email;givenName;tags\r\nA;;;\r\n",
        "A,a@example.org,Ada,\r\n",
    ],
)
async def test_a_wrong_header_names_the_expected_one(world: World, body: str) -> None:
    org = world.org()
    response = await post_csv(org, body)
    assert fields_of(response) == ["line 1: header"]
    assert "team,email,givenName,tags" in response.json()["errors"][0]["message"]
    assert await org.teams() == []


@pytest.mark.parametrize("body", ["", "\ufeff", "team,email,givenName,tags\r\n", "\r\n\r\n"])
async def test_a_file_without_teams_is_422(world: World, body: str) -> None:
    org = world.org()
    response = await post_csv(org, body.encode())
    assert response.status_code == 422, response.text
    assert await org.teams() == []


async def test_invalid_utf8_is_422_naming_its_line(world: World) -> None:
    org = world.org()
    body = b"team,email,givenName,tags\r\nA,a@example.org,Ada,\r\n" + (
        b"B,b@example.org,J\xfcrgen,\r\n"  # Latin-1, as an old spreadsheet saves it
    )
    response = await post_csv(org, body)
    assert fields_of(response) == ["line 3"]
    assert "UTF-8" in response.json()["detail"]
    assert await org.teams() == []


async def test_bad_rows_are_named_by_physical_line_and_nothing_is_written(world: World) -> None:
    org = world.org()
    await org.create_team("Taken")
    members_before = len(await members_of(org))
    body = (
        "team,email,givenName,tags\r\n"  # 1
        'Fine,ok@example.org,"Two\r\nLines",\r\n'  # 2-3
        "Fine,not-an-email,Bad,\r\n"  # 4
        "Fine,half@example.org,,\r\n"  # 5
        ",,Nameless,\r\n"  # 6
        "taken,t@example.org,T,\r\n"  # 7
        f"Long,l@example.org,L,{'x' * 51}\r\n"  # 8
        "Other,o@example.org,O,\r\n"  # 9
    )
    response = await post_csv(org, body)
    assert fields_of(response) == [
        "line 2: givenName",  # a line break in a name (docs/reliability.md)
        "line 4: email",
        "line 5: givenName",
        "line 6: team",
        "line 7: team",
        "line 8: tags[0]",
    ]
    messages = [e["message"] for e in response.json()["errors"]]
    assert "already exists" in messages[4]
    assert await team_names(org) == ["Taken"]
    assert len(await members_of(org)) == members_before


async def test_a_given_name_without_email_is_a_problem(world: World) -> None:
    org = world.org()
    response = await post_csv(org, csv_text([("A", "", "Ada", "")]))
    assert fields_of(response) == ["line 2: email"]


async def test_more_than_twenty_tags_over_a_teams_rows_is_a_problem(world: World) -> None:
    org = world.org()
    rows = [
        ("T", f"p{i}@example.org", "P", ";".join(f"t{i}-{j}" for j in range(5))) for i in range(5)
    ]
    response = await post_csv(org, csv_text(rows))
    assert fields_of(response) == ["line 6: tags"]
    assert await org.teams() == []


@pytest.mark.parametrize(
    "body",
    [
        'team,email,givenName,tags\r\n"Unclosed,a@example.org,Ada,\r\n',
        'team,email,givenName,tags\r\n"A"x,a@example.org,Ada,\r\n',
        "team,email,givenName,tags\r\nA,a@example.org,Ada,x,extra\r\n",
        "team,email,givenName,tags\r\nA\0,a@example.org,Ada,\r\n",
    ],
)
async def test_malformed_csv_is_422_naming_the_line(world: World, body: str) -> None:
    org = world.org()
    response = await post_csv(org, body)
    assert fields_of(response) == ["line 2"], response.text
    assert await org.teams() == []


async def test_trailing_empty_cells_may_be_left_out(world: World) -> None:
    org = world.org()
    response = await post_csv(org, "team,email,givenName,tags\r\nShort\r\n")
    assert response.status_code == 201, response.text
    assert response.json()[0]["Name"] == "Short"


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        ("text/csv; charset=utf-8", 201),
        ("text/csv; charset=latin-1", 415),
        ("text/plain", 415),
    ],
)
async def test_media_types(world: World, content_type: str, status: int) -> None:
    org = world.org()
    response = await post_csv(
        org, "team,email,givenName,tags\r\nA,,,\r\n", content_type=content_type
    )
    assert response.status_code == status, response.text
    assert len(await org.teams()) == (1 if status == 201 else 0)


async def test_member_token_is_403_for_csv(world: World) -> None:
    org = world.org()
    response = await post_csv(org, "team,email,givenName,tags\r\nA,,,\r\n", headers=org.member)
    assert response.status_code == 403
    assert await org.teams() == []


async def test_header_names_ignore_spaces_underscores_and_hyphens(world: World) -> None:
    org = world.org()
    body = "Team Name,E-mail,Given Name,TAGS\r\nRed,ada@example.org,Ada,x\r\n"
    refused = await post_csv(org, body.encode())
    assert refused.status_code == 422, "'Team Name' is not 'team': no guessing beyond spelling"
    body = "Team,E_mail,Given Name,TAGS\r\nRed,ada@example.org,Ada,x\r\n"
    response = await post_csv(org, body.encode())
    assert response.status_code == 201, response.text
    assert [(t["Name"], t["MemberCount"], t["Tags"]) for t in response.json()] == [
        ("Red", 1, ["x"])
    ]
    assert [m["GivenName"] for m in await members_of(org)] == ["Ada"]
