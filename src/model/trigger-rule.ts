/** A rule of the TRIGGER_RULES file: an event whose named fields all equal `when` emits `emit` (contract). */
export interface TriggerRule {
  readonly id: string;
  readonly when: Readonly<Partial<Record<'type' | 'name' | 'clientId' | 'id', string>>>;
  readonly emit: string;
}
