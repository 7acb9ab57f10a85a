package io.egressservice.plan;

import io.egressservice.ip.IpPrefix;
import java.util.Optional;

/** A usable endpoint of a service: a pod-network address, with its node when the EndpointSlice says. */
record CandidateEndpoint(IpPrefix address, Optional<String> nodeName) {}
