// The turn input's types: every AI SDK UIMessage and ModelMessage array is a TurnInput, without helix's
// declarations importing the `ai` package (they describe a UIMessage structurally).
import type { ModelMessage, UIMessage } from 'ai';
import { describe, expectTypeOf, it } from 'vitest';
import type { TurnInput } from '../index.js';

describe('TurnInput', () => {
  it('takes a string, ModelMessage arrays and UIMessage arrays from ai', () => {
    expectTypeOf<string>().toMatchTypeOf<TurnInput>();
    expectTypeOf<ModelMessage[]>().toMatchTypeOf<TurnInput>();
    expectTypeOf<UIMessage[]>().toMatchTypeOf<TurnInput>();
    expectTypeOf<readonly UIMessage<{ source: string }>[]>().toMatchTypeOf<TurnInput>();
  });

  it('refuses what is neither', () => {
    expectTypeOf<number>().not.toMatchTypeOf<TurnInput>();
    expectTypeOf<{ role: 'user'; text: string }[]>().not.toMatchTypeOf<TurnInput>();
  });
});
