// The dashboard JSON checked against Grafana's own published types
// (@grafana/schema), by deploy/tests/test_dashboards_schema.py: each
// dashboard is written out as a literal that `satisfies Wire<Dashboard>`,
// so a missing required field, a wrong type and an unknown key all fail.
//
// Grafana declares its closed sets of strings as TypeScript string enums,
// and a JSON string is not assignable to an enum member; JSON holds the
// enum's values. Wire<T> is T with each string enum read as the union of
// its values, and every other type left as Grafana declares it.
import type { Dashboard } from "@grafana/schema";

type Wire<T> = T extends string
  ? `${T}`
  : T extends readonly (infer U)[]
    ? Wire<U>[]
    : T extends object
      ? { [K in keyof T]: Wire<T[K]> }
      : T;

export type WireDashboard = Wire<Dashboard>;
