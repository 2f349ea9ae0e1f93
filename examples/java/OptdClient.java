// OptdClient: a minimal optd client for a YARN-style scheduler written in
// Java, using only the JDK (java.net.http) against optd's HTTP/JSON gateway
// (`optd serve --gateway-listen HOST:PORT`). It registers a cluster, submits
// a job, sends a node's heartbeat, places the job's reducers, reports the
// job finished and deletes the cluster (a unique id per run, so it can run
// again). Each answer is printed as one line: the call's name, a space, the
// gateway's JSON.
//
//   java examples/java/OptdClient.java http://127.0.0.1:8080 [TOKEN]
//
// With TLS use an https:// URL (the JDK's trust store, or
// -Djavax.net.ssl.trustStore=...). The token defaults to $OPTD_TOKEN.
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

public class OptdClient {
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private final String base;
    private final String token;

    OptdClient(String base, String token) {
        this.base = base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
        this.token = token;
    }

    /** Calls optd.v1.ClusterService/METHOD with a JSON request; returns the JSON answer. */
    String call(String method, String json) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + "/optd.v1.ClusterService/" + method))
                .timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json));
        if (token != null && !token.isEmpty()) {
            b.header("Authorization", "Bearer " + token);
        }
        HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new RuntimeException(method + ": HTTP " + r.statusCode() + ": " + r.body());
        }
        return r.body().replace("\n", " ");
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: java OptdClient.java BASE_URL [TOKEN]");
            System.exit(2);
        }
        String token = args.length > 1 ? args[1] : System.getenv("OPTD_TOKEN");
        OptdClient c = new OptdClient(args[0], token);
        String id = "java-" + ProcessHandle.current().pid() + "-" + System.currentTimeMillis();
        // Two nodes of 8 GB and 4 vcores, 2 reduce slots each; FIFO heartbeats,
        // greedy reduce placement.
        String node = "{\"id\":\"%s\",\"rack\":\"%s\",\"reduce_slots\":2,\"capacity\":{\"memory_mb\":8192,\"vcores\":4}}";
        System.out.println("register " + c.call("RegisterCluster", "{\"cluster_id\":\"" + id + "\","
                + "\"nodes\":[" + String.format(node, "n1", "r1") + "," + String.format(node, "n2", "r2") + "],"
                + "\"policy\":{\"name\":\"greedy\"},"
                + "\"heartbeat\":{\"spec\":\"fifo\",\"resources\":[\"memory_mb\",\"vcores\"]}}"));
        try {
            System.out.println("submit " + c.call("SubmitJob", "{\"cluster_id\":\"" + id + "\",\"job_id\":\"wordcount\","
                    + "\"maps\":2,\"reduces\":1,\"submit_s\":0,"
                    + "\"map_demand\":{\"memory_mb\":1024,\"vcores\":1},\"reduce_demand\":{\"memory_mb\":2048,\"vcores\":1},"
                    + "\"stages\":[{\"maps\":[{\"nodes\":[\"n1\"]},{\"nodes\":[\"n2\"]}],\"reduces\":1}]}"));
            System.out.println("heartbeat " + c.call("Heartbeat", "{\"cluster_id\":\"" + id + "\",\"node_id\":\"n1\",\"now_s\":1,\"seq\":1}"));
            System.out.println("place " + c.call("PlaceReduces", "{\"cluster_id\":\"" + id + "\",\"job_id\":\"wordcount\",\"data_mb\":1024}"));
            System.out.println("finished " + c.call("JobFinished", "{\"cluster_id\":\"" + id + "\",\"job_id\":\"wordcount\"}"));
        } finally {
            System.out.println("delete " + c.call("DeleteCluster", "{\"cluster_id\":\"" + id + "\"}"));
        }
    }
}
