// Shapes of the Questline API, named for the views. They are the generated types of the
// service's OpenAPI document (api-types.ts, from openapi.json by `npm run gen:types`;
// `make frontend` refreshes both): never write an API shape by hand here. Only what is
// purely client-side is written below.

import type { components } from './api-types';

type Schemas = components['schemas'];

export type Team = Schemas['Team'];
export type TeamStatus = Schemas['TeamStatus'];
export type TeamUpdate = Schemas['TeamUpdate'];
export type TeamCreate = Schemas['TeamCreate'];
/** `Email` is null for callers with the member role (they see names, not addresses). */
export type Member = Schemas['Member'];
export type MemberAdd = Schemas['MemberAdd'];
export type Overview = Schemas['Overview'];
export type DisciplineProgress = Schemas['DisciplineProgress'];
export type LevelProgress = Schemas['LevelProgress'];
export type QuestProgress = Schemas['QuestProgress'];
export type Series = Schemas['Series'];
export type GraphPoint = Schemas['GraphPoint'];
export type LeaderboardEntry = Schemas['LeaderboardEntry'];
export type DisciplineSummary = Schemas['DisciplineSummary'];
export type Discipline = Schemas['Discipline'];
export type Level = Schemas['Level'];
export type Quest = Schemas['Quest'];
export type Task = Schemas['Task'];
export type Resource = Schemas['Resource'];
export type Completion = Schemas['Completion'];
export type ProgressCreate = Schemas['ProgressCreate'];
export type SurveyFlag = Schemas['SurveyFlag'];
/** `POST /auth/session`: a sign-in code or an identity provider's ID token. */
export type SessionCreate = Schemas['SessionCreate'];
/** `GET /auth/session`: the signed-in dashboard session. */
export type SessionInfo = Schemas['SessionInfo'];
export type ProblemDocument = Schemas['ProblemDocument'];
/** `GET /auth/oidc/{organization_id}`: the organization signs in through its provider. */
export type SsoAvailability = Schemas['SsoAvailability'];
/** `GET /auth/oidc/session`: the provider's logout for this session, if any. */
export type ProviderLogout = Schemas['ProviderLogout'];
/** `GET /organization/sso` (admins): the organization's OpenID provider. */
export type SsoConfiguration = Schemas['SsoConfiguration'];
/** `PUT /organization/sso`. */
export type SsoConfigurationPut = Schemas['SsoConfigurationPut'];

// Client-side only -----------------------------------------------------------------

/**
 * An RFC 9457 problem document as the page reads it from any failed response: the
 * service's ProblemDocument, every member optional, since a proxy or an older server
 * may send less (or an error page that is no problem document at all).
 */
export type Problem = Partial<Omit<ProblemDocument, 'errors'>> & {
  errors?: Partial<Schemas['FieldError']>[] | null;
};
