/** The values of ES_ENGINE: `auto` asks the server at start, the others name it. */
export const ENGINE_SETTINGS = [
  'auto',
  'elasticsearch-8',
  'elasticsearch-9',
  'opensearch-2',
  'opensearch-3',
] as const;
export type EngineSetting = (typeof ENGINE_SETTINGS)[number];
