import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Catalogue } from '../../../core/config/index.js';
import type { GatewayMetrics } from '../../../core/telemetry/index.js';
import { codeLabel, interfaceLabel, modelLabel, rejectionReason } from './request-labels.js';
import { answeringAttempt } from '../pipeline/attempts.js';

/**
 * Records one finished request in the gateway's metrics: the request itself (or an enforcement
 * refusal) and, unless `routingLater`, what its routing record holds (recordRoutingMetrics).
 * Called once per request from the onResponse hook (or when its client left, with status 499), so
 * the request path itself does no metrics work.
 */
export function recordRequestMetrics(
  metrics: GatewayMetrics,
  catalogue: Catalogue,
  request: FastifyRequest,
  reply: FastifyReply,
  status = reply.statusCode,
  routingLater = false,
): void {
  const routing = request.routing;
  const answered = answeringAttempt(routing);
  const iface = interfaceLabel(request);
  const model = modelLabel(catalogue, routing?.model);
  const supplier = answered?.supplier ?? 'none';
  // A stream cut after its first byte is answered 200 but ends with its attempt's error.
  const code = codeLabel(request.errorCode ?? (answered?.outcome === 'failed' ? answered.code : undefined));

  metrics.requests.inc({ interface: iface, model, supplier, region: answered?.region ?? 'none', status: String(status), code });
  metrics.requestDuration.observe({ interface: iface, model }, reply.elapsedTime / 1000);

  const reason = rejectionReason(request.errorCode, routing?.attempts.length ?? 0);
  if (reason) metrics.rejections.inc({ reason });
  if (!routingLater) recordRoutingMetrics(metrics, catalogue, request, reply);
}

/**
 * What a request's routing record holds, in the metrics: each supplier attempt (as its audit
 * record has it), failovers, tokens, cost, the gateway's own overhead and (streams) the time to
 * first byte. For a request whose client left while the pipeline still worked on it, called when
 * the pipeline ends (app.ts): counted at the client's leaving, its attempts were never counted,
 * nor the tokens and cost of what it had streamed (outside probe).
 */
export function recordRoutingMetrics(metrics: GatewayMetrics, catalogue: Catalogue, request: FastifyRequest, reply: FastifyReply): void {
  const routing = request.routing;
  const attempts = routing?.auditedAttempts ?? routing?.attempts ?? [];
  if (!routing || attempts.length === 0) return;
  const iface = interfaceLabel(request);
  const model = modelLabel(catalogue, routing.model);
  const supplier = answeringAttempt(routing)?.supplier ?? 'none';
  for (const [index, attempt] of attempts.entries()) {
    const labels = { supplier: attempt.supplier, region: attempt.region, outcome: attempt.outcome };
    metrics.upstreamDuration.observe(labels, attempt.latencyMs / 1000);
    metrics.upstreamAttempts.inc({ ...labels, code: codeLabel(attempt.code) });
    if (attempt.outcome === 'failed' && index < attempts.length - 1) {
      metrics.failovers.inc({ model, supplier: attempt.supplier, code: codeLabel(attempt.code) });
    }
  }
  metrics.overhead.observe({ interface: iface }, Math.max(0, reply.elapsedTime - routing.upstreamMs) / 1000);
  if (routing.firstByteMs !== undefined) metrics.timeToFirstByte.observe({ interface: iface, model, supplier }, routing.firstByteMs / 1000);
  const usage = routing.usage;
  if (usage) {
    if (usage.inputTokens > 0) metrics.tokens.inc({ direction: 'input', model, supplier }, usage.inputTokens);
    if (usage.outputTokens > 0) metrics.tokens.inc({ direction: 'output', model, supplier }, usage.outputTokens);
  }
  if (routing.costUsd !== undefined && routing.costUsd > 0) metrics.cost.inc({ model, supplier }, routing.costUsd);
}
