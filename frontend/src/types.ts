// Shapes of the Questline API (PascalCase output, DESIGN.md §4–§6).

export interface Team {
  Id: string;
  Name: string;
  OrganizationId: string;
  Status: string;
  Tags: string[];
  Score: number;
  IsSurveyCompleted: boolean;
  IsAdminTeam: boolean;
  MemberCount: number;
  CreatedAt: string;
}

export interface Member {
  Id: string;
  /** Null for callers with the member role (they see names, not addresses). */
  Email: string | null;
  GivenName: string;
  TeamIds: string[];
  CreatedAt: string;
}

export interface Counts {
  TasksCompleted: number;
  TasksTotal: number;
  PointsEarned: number;
  PointsTotal: number;
  Percent: number;
}

export interface QuestProgress extends Counts {
  QuestId: string;
  Title: string;
}

export interface LevelProgress extends Counts {
  LevelId: string;
  Title: string;
  Quests: QuestProgress[];
}

export interface DisciplineProgress extends Counts {
  DisciplineId: string;
  Title: string;
  Color: string | null;
  CurrentLevelId: string | null;
  Levels: LevelProgress[];
}

export interface Overview {
  TeamId: string;
  Name: string;
  Status: string;
  IsAdminTeam: boolean;
  IsSurveyCompleted: boolean;
  Score: number;
  Rank: number | null;
  MemberCount: number;
  TasksCompleted: number;
  LastActivityAt: string | null;
  Disciplines: DisciplineProgress[];
}

export interface GraphPoint {
  At: string;
  Score: number;
}

export interface Series {
  TeamId: string;
  Name: string;
  Points: GraphPoint[];
}

export interface LeaderboardEntry {
  Rank: number;
  TeamId: string;
  Name: string;
  Score: number;
  TasksCompleted: number;
  ReachedAt: string | null;
}

export interface DisciplineSummary {
  Id: string;
  Title: string;
  Description: string;
  OrganizationId: string | null;
  Color: string | null;
  LevelCount: number;
  QuestCount: number;
  TaskCount: number;
  PointsTotal: number;
  CreatedAt: string;
  UpdatedAt: string;
}

export interface Resource {
  Id: string;
  Order: number;
  Title: string;
  Description: string;
  Url: string;
  Kind: string;
}

interface Node {
  Id: string;
  Order: number;
  Title: string;
  Description: string;
  Resources: Resource[];
}

export interface Task extends Node {
  Points: number;
}

export interface Quest extends Node {
  Tasks: Task[];
}

export interface Level extends Node {
  Quests: Quest[];
}

export interface Discipline {
  Id: string;
  Title: string;
  Description: string;
  OrganizationId: string | null;
  Color: string | null;
  CreatedAt: string;
  UpdatedAt: string;
  Resources: Resource[];
  Levels: Level[];
}

/** RFC 9457 problem document, as the service sends it. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  instance?: string;
  requestId?: string;
  errors?: { field?: string; message?: string }[];
}

/** `GET /auth/session`: the signed-in dashboard session. */
export interface SessionInfo {
  Subject: string;
  Role: string;
  OrganizationId: string;
  Email: string | null;
  TeamIds: string[];
  ExpiresAt: string;
  CsrfToken: string;
}

export interface Completion {
  TeamId: string;
  TaskId: string;
  DisciplineId: string;
  Points: number;
  CompletedAt: string;
  Score: number | null;
}
