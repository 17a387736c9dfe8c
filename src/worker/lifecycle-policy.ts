import { type Client, errors } from '@elastic/elasticsearch';
import type { Logger } from 'pino';
import type { SearchEngine } from '../clients/search-engine.js';

/**
 * EVENTS_ILM_POLICY for the indices of a date-pattern EVENTS_INDEX, in the engine's terms.
 *
 * - Elasticsearch: an ILM policy, attached by the template (`index.lifecycle.name`).
 * - OpenSearch: an ISM policy. ISM attaches a policy to new indices through the policy's own
 *   `ism_template`, not through an index setting; rxingest does not edit the operator's
 *   policy, it checks that the policy exists and covers the events indices and says so.
 *
 * Where the cluster has no lifecycle management (the integ-test distributions), the template
 * goes without one, with a warning. Answers the template settings that attach the policy.
 */
export async function lifecycleSettings(
  es: Client,
  engine: SearchEngine | undefined,
  policy: string,
  wildcard: string,
  log: Logger,
): Promise<Record<string, string>> {
  if (engine?.product === 'opensearch') {
    await checkIsmPolicy(es, policy, wildcard, log);
    return {};
  }
  try {
    await es.ilm.getStatus();
    return { 'index.lifecycle.name': policy };
  } catch (err) {
    log.warn(
      { err: String(err) },
      'EVENTS_ILM_POLICY is set but this cluster has no index lifecycle management: the template goes without it',
    );
    return {};
  }
}

interface IsmPolicyAnswer {
  policy?: { ism_template?: IsmTemplate | IsmTemplate[] | null };
}
interface IsmTemplate {
  index_patterns?: string[];
}

/** Whether an ISM index pattern (`*` wildcards) takes in every index of `wildcard`. */
export function ismPatternCovers(pattern: string, wildcard: string): boolean {
  if (pattern === wildcard) return true;
  const star = pattern.indexOf('*');
  return star === pattern.length - 1 && wildcard.startsWith(pattern.slice(0, -1));
}

async function checkIsmPolicy(es: Client, policy: string, wildcard: string, log: Logger): Promise<void> {
  let answer: IsmPolicyAnswer;
  try {
    answer = await es.transport.request<IsmPolicyAnswer>({
      method: 'GET',
      path: `/_plugins/_ism/policies/${encodeURIComponent(policy)}`,
    });
  } catch (err) {
    const missingPolicy =
      err instanceof errors.ResponseError &&
      err.statusCode === 404 &&
      /policy/i.test(JSON.stringify(err.body));
    log.warn(
      { policy, err: String(err) },
      missingPolicy
        ? 'EVENTS_ILM_POLICY names an ISM policy this cluster does not have: the events indices go without one'
        : 'EVENTS_ILM_POLICY is set but this cluster has no index state management (ISM): the events indices go without it',
    );
    return;
  }
  const templates = answer.policy?.ism_template;
  const patterns = (Array.isArray(templates) ? templates : templates ? [templates] : []).flatMap(
    (t) => t.index_patterns ?? [],
  );
  if (patterns.some((p) => ismPatternCovers(p, wildcard))) {
    log.info(
      { policy, pattern: wildcard },
      'the ISM policy applies to new events indices through its ism_template',
    );
    return;
  }
  log.warn(
    { policy, pattern: wildcard, patterns },
    `the ISM policy's ism_template does not cover the events indices: add "${wildcard}" to its index_patterns, or they go without it`,
  );
}
