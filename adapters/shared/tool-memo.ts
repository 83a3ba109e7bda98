// The guard caches what tool definitions cost by identity (the array, then each definition), and a
// host sends the same tools with every call: so the conversion of a host's tools is remembered, the
// same array (or tool object) always giving the same definitions (or definition).
import type { ToolDefinition } from '../../src/index.ts';

/**
 * `toGuardTools` for one framework's tool shape: `convert` runs once per tool object and once per
 * array; entries that are not objects (nothing to key a cache on) are converted every time.
 * Undefined for anything that is not an array.
 */
export function memoizedToolConverter<Tool>(
  convert: (tool: Tool) => ToolDefinition,
): (tools: readonly Tool[] | undefined) => ToolDefinition[] | undefined {
  const lists = new WeakMap<readonly Tool[], ToolDefinition[]>();
  const definitions = new WeakMap<object, ToolDefinition>();
  const definitionOf = (tool: Tool): ToolDefinition => {
    if (typeof tool !== 'object' || tool === null) return convert(tool);
    let definition = definitions.get(tool);
    if (!definition) {
      definition = convert(tool);
      definitions.set(tool, definition);
    }
    return definition;
  };
  return (tools) => {
    if (!Array.isArray(tools)) return undefined;
    let converted = lists.get(tools);
    if (!converted) {
      converted = tools.map(definitionOf);
      lists.set(tools, converted);
    }
    return converted;
  };
}
