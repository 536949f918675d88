import { describe, expect, it } from 'vitest';
import { editableCheck, editableHints, toEditable, withKind } from './views/editor';

const doc = {
  Id: 'd1',
  Title: 'Web',
  Description: 'x',
  Color: 'Purple',
  Resources: [],
  Levels: [
    { Id: 'l2', Order: 1, Title: 'Second', Description: '', Resources: [], Quests: [] },
    {
      Id: 'l1',
      Order: 0,
      Title: 'First',
      Description: '',
      Resources: [{ Id: 'r1', Order: 0, Title: 'R', Description: '', Url: 'https://e.org', Kind: 'Book' }],
      Quests: [{ Id: 'q1', Order: 0, Title: 'Q', Description: '', Resources: [], Tasks: [{ Id: 't1', Order: 0, Title: 'T', Description: '', Points: 20, Resources: [] }] }],
    },
  ],
};

describe('the editor document', () => {
  it('orders nodes by Order and keeps Ids when editing', () => {
    const e = toEditable(doc, true);
    expect(e.Levels.map((l) => l.Title)).toEqual(['First', 'Second']);
    expect(e.Levels[0]?.Id).toBe('l1');
    expect(e.Levels[0]?.Quests[0]?.Tasks[0]).toEqual({ Id: 't1', Title: 'T', Description: '', Points: 20, Resources: [] });
    expect(e.Levels[0]?.Resources[0]?.Kind).toBe('Book');
    expect(JSON.stringify(e)).not.toContain('Order');
  });
  it('drops Ids for a new discipline and reads any casing', () => {
    const e = toEditable({ title: 'Imported', description: 'd', levels: [{ title: 'L', quests: [{ title: 'Q', tasks: [{ title: 'T', points: 5 }] }] }] }, false);
    expect(e.Title).toBe('Imported');
    expect(e.Levels[0]?.Quests[0]?.Tasks[0]?.Points).toBe(5);
    expect(JSON.stringify(toEditable(doc, false))).not.toContain('"Id"');
  });
});

describe('checks and hints in the editor', () => {
  it('keeps stored answers by their digest and new ones by their value', () => {
    const task = {
      Title: 't',
      Description: '',
      Points: 1,
      Resources: [],
      Check: { Kind: 'Answer', MaxAttempts: 3, Answers: [{ Match: 'Exact', Digest: 'qd1:x' }, { Match: 'Regex', Value: 'a+' }] },
    };
    const check = editableCheck(task);
    expect(check).toEqual({ Kind: 'Answer', MaxAttempts: 3, Answers: [{ Digest: 'qd1:x', Match: 'Exact' }, { Value: 'a+', Match: 'Regex' }] });
  });
  it('drops answers and attempts on another kind, and starts an Answer check with one empty answer', () => {
    expect(withKind({ Kind: 'Answer', MaxAttempts: 2, Answers: [{ Value: 'x' }] }, 'Self')).toEqual({ Kind: 'Self' });
    expect(withKind({ Kind: 'Admin' }, 'Answer')).toEqual({ Kind: 'Answer', MaxAttempts: null, Answers: [{ Value: '', Match: 'Exact' }] });
  });
  it('reads a task without a check as Admin, and hints with their cost', () => {
    const task = { Title: 't', Description: '', Points: 1, Resources: [], Hints: [{ Text: 'look', Cost: 5 }, { Text: 'free' }] };
    expect(editableCheck(task).Kind).toBe('Admin');
    expect(editableHints(task)).toEqual([{ Text: 'look', Cost: 5 }, { Text: 'free', Cost: 0 }]);
  });
});
