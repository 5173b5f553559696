/** `T` with its fields writable: for an object built field by field (no conditional spreads) before it is handed on as a `T`. Internal. */
export type Writable<T> = { -readonly [K in keyof T]: T[K] };
