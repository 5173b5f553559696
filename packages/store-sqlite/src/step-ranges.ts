/** The committed step indexes of a run, as sorted, disjoint, inclusive ranges. */
export type StepRanges = [number, number][];

/** True when `step` is in the ranges. */
export function hasStep(ranges: StepRanges, step: number): boolean {
  for (const [lo, hi] of ranges) if (step >= lo && step <= hi) return true;
  return false;
}

/** The ranges with `step` added (steps come in order, so this is almost always "extend the last range"). */
export function addStep(ranges: StepRanges, step: number): StepRanges {
  const last = ranges.at(-1);
  if (last && step === last[1] + 1) {
    last[1] = step;
    return ranges;
  }
  const all: StepRanges = [...ranges, [step, step] as [number, number]].sort((a, b) => a[0] - b[0]);
  const merged: StepRanges = [];
  for (const range of all) {
    const previous = merged.at(-1);
    if (previous && range[0] <= previous[1] + 1) previous[1] = Math.max(previous[1], range[1]);
    else merged.push([range[0], range[1]]);
  }
  return merged;
}
