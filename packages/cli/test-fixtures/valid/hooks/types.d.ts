/** Declarations are not hooks. */
export type Unused = string;
