"""The discipline document (DESIGN §4): levels → quests → tasks, resources on every node.

Input names are PascalCase and matched case-insensitively, so a validation error names
its place as a user reads it, e.g. ``Levels[1].Quests[0].Tasks[2].Title``.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    HttpUrl,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_pascal

from questline.disciplines.examples import DISCIPLINE_OUT, FULL_DOCUMENT, SUMMARY_OUT
from questline.disciplines.models import CheckKind, Color, Match
from questline.web.schemas import (
    PRINTABLE,
    InputModel,
    OutputModel,
    UtcDateTime,
    examples,
    refuse_invisible,
    text,
)

MAX_LEVELS = 100
MAX_QUESTS = 100
MAX_TASKS = 100
MAX_RESOURCES = 50
MAX_POINTS = 1_000_000
DEFAULT_POINTS = 10
TITLE_MAX = 200
DESCRIPTION_MAX = 20_000
URL_MAX = 2048
KIND_MAX = 50
DEFAULT_KIND = "Link"
MAX_ANSWERS = 20
ANSWER_MAX = 1000
MAX_ATTEMPTS = 1_000_000
MAX_HINTS = 10
HINT_TEXT_MAX = 5000
MAX_COST = 1_000_000
DIGEST_MAX = 100

COLORS = ", ".join(c.value for c in Color)


def _canonical_color(value: Any) -> Any:
    """``purple``, ``PURPLE`` … → ``Purple``; anything else is refused naming the values."""
    if value is None:
        return None
    if isinstance(value, str):
        for color in Color:
            if color.value.casefold() == value.strip().casefold():
                return color
    raise ValueError(f"Color must be one of {COLORS} (any case), or null for none.")


ColorInput = Annotated[
    Color | None,
    BeforeValidator(_canonical_color),
    Field(description=f"One of {COLORS}, matched case-insensitively; null for none."),
]

_HTTP_URL: TypeAdapter[HttpUrl] = TypeAdapter(HttpUrl)


def _absolute_http_url(value: str) -> str:
    """Checked as an absolute http(s) URL, but kept exactly as written."""
    try:
        _HTTP_URL.validate_python(value)
    except ValidationError:
        raise ValueError("Url must be an absolute http:// or https:// URL.") from None
    return value


Title = Annotated[str, text(TITLE_MAX), AfterValidator(refuse_invisible)]
"""Titles are names (lists, graphs, the leaderboard show them): no control or invisible
characters, tab and line breaks included; not NFKC-normalized (``web.schemas.label``)."""
RequiredDescription = Annotated[str, text(DESCRIPTION_MAX)]
OptionalDescription = Annotated[
    str,
    Field(max_length=DESCRIPTION_MAX, pattern=PRINTABLE),
    AfterValidator(lambda v: v.strip()),
]
Url = Annotated[
    str,
    text(URL_MAX),
    AfterValidator(_absolute_http_url),
    Field(
        description="An absolute http:// or https:// URL.",
        json_schema_extra={"format": "uri", "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://"},
    ),
]
Kind = Annotated[str, text(KIND_MAX), AfterValidator(refuse_invisible)]
Points = Annotated[
    int,
    Field(ge=0, le=MAX_POINTS, strict=True, description="A whole number, 0 to 1,000,000."),
]
NodeOrder = Annotated[
    int | None,
    Field(
        ge=0,
        description="Read-only: the node's place in its list. May be sent back as read; "
        "to reorder, move the node in the list.",
    ),
]
NodeId = Annotated[
    uuid.UUID | None,
    Field(
        description="On PUT: the `Id` of an existing node of the same kind, whose identity "
        "(and the progress made on it) is kept. Leave it out for a new node."
    ),
]


def _at_most(limit: int, what: str) -> BeforeValidator:
    """Refuse an over-long list before validating its items, naming the limit."""

    def check(value: Any) -> Any:
        if isinstance(value, list) and len(value) > limit:
            raise ValueError(f"At most {limit} {what} (got {len(value)}).")
        return value

    return BeforeValidator(check)


class NodeInput(InputModel):
    model_config = ConfigDict(alias_generator=to_pascal)


def _canonical(kind: type[CheckKind] | type[Match], what: str) -> BeforeValidator:
    """A value of ``kind`` in any case (``self`` → ``Self``), else refused naming the values."""
    names = ", ".join(member.value for member in kind)

    def canonical(value: Any) -> Any:
        if isinstance(value, str):
            for member in kind:
                if member.value.casefold() == value.strip().casefold():
                    return member
        raise ValueError(f"{what} must be one of {names} (any case).")

    return BeforeValidator(canonical)


AnswerValue = Annotated[
    str,
    Field(
        min_length=1,
        max_length=ANSWER_MAX,
        pattern=PRINTABLE,
        description="1 to 1,000 characters, kept as written.",
    ),
]


class AnswerInput(NodeInput):
    """One accepted answer: a new `Value`, or the `Digest` `GET` showed for a stored one
    (`Exact` and `IgnoreCase` answers are kept only as keyed digests)."""

    value: AnswerValue | None = None
    match: Annotated[Match, _canonical(Match, "Match")] = Field(
        default=Match.EXACT,
        description="`Exact` (as written), `IgnoreCase` (case and surrounding spaces "
        "ignored) or `Regex` (a full match, RE2 syntax).",
    )
    digest: str | None = Field(
        default=None,
        max_length=DIGEST_MAX,
        description="On PUT: keeps the stored answer `GET` showed with this digest "
        "(instead of `Value`).",
    )

    @model_validator(mode="after")
    def _value_or_digest(self) -> AnswerInput:
        if (self.value is None) == (self.digest is None):
            raise ValueError("Send Value (a new answer) or Digest (a stored one), not both.")
        if self.digest is not None and self.match is Match.REGEX:
            raise ValueError("A Regex answer is sent back with its Value.")
        return self


class CheckInput(NodeInput):
    """How the task is completed (docs/learners.md)."""

    kind: Annotated[CheckKind, _canonical(CheckKind, "Kind")] = Field(
        default=CheckKind.ADMIN,
        description="`Admin` (an admin records it), `Self` (a member marks it done), "
        "`Answer` (a member submits an answer), `Review` (an admin approves submitted work).",
    )
    answers: Annotated[
        list[AnswerInput] | None,
        Field(
            min_length=1,
            max_length=MAX_ANSWERS,
            description="`Answer` only: 1 to 20 accepted answers; one match completes the "
            "task. Left out on PUT of a task sent with its `Id`: the stored ones are kept.",
        ),
        _at_most(MAX_ANSWERS, "answers"),
    ] = None
    max_attempts: int | None = Field(
        default=None,
        ge=1,
        le=MAX_ATTEMPTS,
        strict=True,
        description="`Answer` only: the attempts a team has (all its members together); "
        "null or left out for unlimited.",
    )

    @model_validator(mode="after")
    def _answers_for_answer_tasks(self) -> CheckInput:
        if self.kind is not CheckKind.ANSWER and (
            self.answers is not None or self.max_attempts is not None
        ):
            raise ValueError("Answers and MaxAttempts belong to a check of Kind Answer only.")
        return self


class HintInput(NodeInput):
    text: Annotated[str, text(HINT_TEXT_MAX)]
    cost: int = Field(
        default=0,
        ge=0,
        le=MAX_COST,
        strict=True,
        description="Points taken from the team's score when it unlocks the hint (0 to 1,000,000).",
    )


class ResourceInput(NodeInput):
    id: NodeId = None
    order: NodeOrder = None
    title: Title
    description: OptionalDescription = ""
    url: Url
    kind: Kind = Field(default=DEFAULT_KIND, description="Free text, e.g. Link, Video, Book.")


Resources = Annotated[
    list[ResourceInput],
    Field(max_length=MAX_RESOURCES, description=f"At most {MAX_RESOURCES}, in order."),
    _at_most(MAX_RESOURCES, "resources on one node"),
]


class TaskInput(NodeInput):
    id: NodeId = None
    order: NodeOrder = None
    title: Title
    description: OptionalDescription = ""
    points: Points = DEFAULT_POINTS
    resources: Resources = Field(default_factory=list)
    check: CheckInput = Field(
        default_factory=CheckInput, description="How the task is completed; default Admin."
    )
    hints: Annotated[
        list[HintInput],
        Field(max_length=MAX_HINTS, description=f"At most {MAX_HINTS}, in order."),
        _at_most(MAX_HINTS, "hints on one task"),
    ] = Field(default_factory=list)


class QuestInput(NodeInput):
    id: NodeId = None
    order: NodeOrder = None
    title: Title
    description: OptionalDescription = ""
    tasks: Annotated[
        list[TaskInput],
        Field(max_length=MAX_TASKS, description=f"At most {MAX_TASKS}, in order."),
        _at_most(MAX_TASKS, "tasks in a quest"),
    ] = Field(default_factory=list)
    resources: Resources = Field(default_factory=list)


class LevelInput(NodeInput):
    id: NodeId = None
    order: NodeOrder = None
    title: Title
    description: OptionalDescription = ""
    quests: Annotated[
        list[QuestInput],
        Field(max_length=MAX_QUESTS, description=f"At most {MAX_QUESTS}, in order."),
        _at_most(MAX_QUESTS, "quests in a level"),
    ] = Field(default_factory=list)
    resources: Resources = Field(default_factory=list)


Levels = Annotated[
    list[LevelInput],
    Field(max_length=MAX_LEVELS, description=f"At most {MAX_LEVELS}, in order."),
    _at_most(MAX_LEVELS, "levels in a discipline"),
]


class DisciplineDocument(NodeInput):
    """The fields a discipline document has on POST and PUT."""

    title: Title
    description: RequiredDescription
    color: ColorInput = None
    sequential: bool = Field(
        default=False,
        strict=True,
        description="Levels open for a team in order: each when the team completed every "
        "task of the previous one.",
    )
    levels: Levels = Field(default_factory=list)
    resources: Resources = Field(default_factory=list)

    def has_tree(self) -> bool:
        return bool(self.levels or self.resources)


class DisciplineCreate(DisciplineDocument):
    """`POST /discipline`: the basic fields alone create an empty discipline; with `Levels`
    and/or `Resources` the whole tree is created from this one document."""

    model_config = examples(FULL_DOCUMENT)

    organization_id: uuid.UUID | None = Field(
        default=None,
        description="Leave out for your own organization. Operators leave it out (or send "
        "null) for a global discipline. Another organization's id is refused (403).",
    )


class DisciplineReplace(DisciplineDocument):
    """`PUT /discipline/{id}`: the new document. Nodes sent with their `Id` keep it.

    What `GET` returned can be sent back as is: `Id` and `OrganizationId` must then be
    this discipline's, `CreatedAt` and `UpdatedAt` are ignored.
    """

    model_config = examples(FULL_DOCUMENT)

    id: uuid.UUID | None = Field(default=None, description="Read-only; this discipline's id.")
    organization_id: uuid.UUID | None = Field(
        default=None, description="Read-only; a discipline cannot move to another owner."
    )
    created_at: Any = Field(default=None, description="Read-only; ignored.")
    updated_at: Any = Field(default=None, description="Read-only; ignored.")


class Resource(OutputModel):
    id: uuid.UUID
    order: int
    title: str
    description: str
    url: str
    kind: str


def _absent(value: Any) -> bool:
    return value is None


class Answer(OutputModel):
    """An accepted answer as admins read it: a `Regex` as written, the others by their
    keyed digest (never the value)."""

    match: Match
    value: str | None = Field(default=None, exclude_if=_absent, description="Regex only.")
    digest: str | None = Field(
        default=None, exclude_if=_absent, description="Exact and IgnoreCase only."
    )


class Check(OutputModel):
    """How the task is completed. Members read `Kind` and `MaxAttempts` only."""

    kind: CheckKind
    max_attempts: int | None = Field(default=None, description="Answer only; null: unlimited.")
    answers: list[Answer] | None = Field(
        default=None, exclude_if=_absent, description="Admins only, Answer tasks only."
    )


class Hint(OutputModel):
    """A hint. Members read its `Cost` only (`POST /team/{id}/hints` unlocks its text)."""

    text: str | None = Field(default=None, exclude_if=_absent, description="Admins only.")
    cost: int


class Task(OutputModel):
    id: uuid.UUID
    order: int
    title: str
    description: str
    points: int
    resources: list[Resource]
    check: Check
    hints: list[Hint]


class Quest(OutputModel):
    id: uuid.UUID
    order: int
    title: str
    description: str
    resources: list[Resource]
    tasks: list[Task]


class Level(OutputModel):
    id: uuid.UUID
    order: int
    title: str
    description: str
    resources: list[Resource]
    quests: list[Quest]


class DisciplineBase(OutputModel):
    id: uuid.UUID
    title: str
    description: str
    organization_id: uuid.UUID | None = Field(description="null for a global discipline.")
    color: Color | None
    sequential: bool
    created_at: UtcDateTime
    updated_at: UtcDateTime


class Discipline(DisciplineBase):
    """A discipline with its whole tree, every node in `Order`."""

    model_config = examples(DISCIPLINE_OUT)

    resources: list[Resource]
    levels: list[Level]


class DisciplineSummary(DisciplineBase):
    """A discipline as listed: its counts instead of its tree."""

    model_config = examples(SUMMARY_OUT)

    level_count: int
    quest_count: int
    task_count: int
    points_total: int
