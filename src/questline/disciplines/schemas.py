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
)
from pydantic.alias_generators import to_pascal

from questline.disciplines.examples import DISCIPLINE_OUT, FULL_DOCUMENT, SUMMARY_OUT
from questline.disciplines.models import Color
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


class Task(OutputModel):
    id: uuid.UUID
    order: int
    title: str
    description: str
    points: int
    resources: list[Resource]


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
