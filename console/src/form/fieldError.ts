// A field the API refused, as its problem+json lists it: the schema's mapping onto form paths and the
// sentences of `words` both read it, so it stands apart from both.

export interface FieldError {
  field: string;
  problem: string;
  allowed: string;
}
