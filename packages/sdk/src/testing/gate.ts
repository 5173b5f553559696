/**
 * A promise a test opens by hand: a tool or a hook awaits `opened`, which holds the run at that point
 * until the test, having looked at the run in flight (or started another), calls `open()`.
 */
export interface Gate {
  /** Settles once {@link Gate.open} is called. */
  readonly opened: Promise<void>;
  /** Lets everything awaiting {@link Gate.opened} go on; calling it again does nothing. */
  open(): void;
}

/** A closed {@link Gate}. */
export function createGate(): Gate {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}
