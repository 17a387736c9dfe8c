package dev.rxingest.esroot;

import org.elasticsearch.Build;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.ClusterName;
import org.elasticsearch.cluster.ClusterState;
import org.elasticsearch.cluster.metadata.Metadata;
import org.elasticsearch.cluster.service.ClusterService;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.index.IndexVersion;
import org.elasticsearch.node.Node;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.xcontent.XContentBuilder;

import java.util.List;
import java.util.function.Supplier;

import static org.elasticsearch.rest.RestRequest.Method.GET;
import static org.elasticsearch.rest.RestRequest.Method.HEAD;

/**
 * The {@code GET /} banner, with the same body as Elasticsearch's own
 * RestMainAction / MainResponse (modules/rest-root).
 */
public class RestRootAction extends BaseRestHandler {

    private final Settings settings;
    private final Supplier<ClusterService> clusterService;

    RestRootAction(Settings settings, Supplier<ClusterService> clusterService) {
        this.settings = settings;
        this.clusterService = clusterService;
    }

    @Override
    public List<Route> routes() {
        return List.of(new Route(GET, "/"), new Route(HEAD, "/"));
    }

    @Override
    public String getName() {
        return "rxingest_main_action";
    }

    @Override
    public boolean canTripCircuitBreaker() {
        return false;
    }

    @Override
    protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
        return channel -> {
            String nodeName = Node.NODE_NAME_SETTING.get(settings);
            ClusterName clusterName = ClusterName.CLUSTER_NAME_SETTING.get(settings);
            String clusterUuid = Metadata.UNKNOWN_CLUSTER_UUID;
            ClusterService cs = clusterService.get();
            if (cs != null) {
                nodeName = cs.getNodeName();
                ClusterState state = cs.state();
                clusterName = state.getClusterName();
                if (state.metadata().clusterUUIDCommitted()) {
                    clusterUuid = state.metadata().clusterUUID();
                }
            }
            Build build = Build.current();
            XContentBuilder builder = channel.newBuilder();
            // Pretty by default, like the real handler; ?pretty=false turns it off.
            if (request.hasParam("pretty") == false) {
                builder.prettyPrint().lfAtEnd();
            }
            builder.startObject();
            builder.field("name", nodeName);
            builder.field("cluster_name", clusterName.value());
            builder.field("cluster_uuid", clusterUuid);
            builder.startObject("version")
                .field("number", build.qualifiedVersion())
                .field("build_flavor", build.flavor())
                .field("build_type", build.type().displayName())
                .field("build_hash", build.hash())
                .field("build_date", build.date())
                .field("build_snapshot", build.isSnapshot())
                .field("lucene_version", IndexVersion.current().luceneVersion().toString())
                .field("minimum_wire_compatibility_version", build.minWireCompatVersion())
                .field("minimum_index_compatibility_version", build.minIndexCompatVersion())
                .endObject();
            builder.field("tagline", "You Know, for Search");
            builder.endObject();
            channel.sendResponse(new RestResponse(RestStatus.OK, builder));
        };
    }
}
