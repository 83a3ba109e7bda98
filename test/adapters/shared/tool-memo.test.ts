import { describe, expect, it, vi } from 'vitest';
import { memoizedToolConverter } from '../../../adapters/shared/tool-memo.ts';

type Tool = { name: string } | null;

describe('memoizedToolConverter', () => {
  const setup = () => {
    const convert = vi.fn((tool: Tool) => ({ name: tool?.name ?? String(tool) }));
    return { convert, toGuardTools: memoizedToolConverter(convert) };
  };

  it('the same array gives the same definitions array, converted once', () => {
    const { convert, toGuardTools } = setup();
    const tools = [{ name: 'read' }, { name: 'write' }];
    const first = toGuardTools(tools);
    expect(first).toEqual([{ name: 'read' }, { name: 'write' }]);
    expect(toGuardTools(tools)).toBe(first);
    expect(convert).toHaveBeenCalledTimes(2);
  });

  it('the same tool in another array gives the same definition object', () => {
    const { convert, toGuardTools } = setup();
    const read = { name: 'read' };
    const a = toGuardTools([read]);
    const b = toGuardTools([read, { name: 'write' }]);
    expect(b?.[0]).toBe(a?.[0]);
    expect(convert).toHaveBeenCalledTimes(2);
  });

  it('entries that are not objects are converted every time (nothing to key on), and non-arrays give undefined', () => {
    const { convert, toGuardTools } = setup();
    expect(toGuardTools([null])).toEqual([{ name: 'null' }]);
    expect(toGuardTools([null])).toEqual([{ name: 'null' }]);
    expect(convert).toHaveBeenCalledTimes(2);
    expect(toGuardTools(undefined)).toBeUndefined();
    expect(toGuardTools({ length: 1 } as never)).toBeUndefined();
  });
});
