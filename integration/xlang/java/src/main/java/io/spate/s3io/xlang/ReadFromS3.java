package io.spate.s3io.xlang;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.apache.beam.fn.harness.ExternalWorkerService;
import org.apache.beam.model.pipeline.v1.ExternalTransforms.ExternalConfigurationPayload;
import org.apache.beam.model.pipeline.v1.ExternalTransforms.SchemaTransformPayload;
import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.PipelineResult;
import org.apache.beam.sdk.coders.RowCoder;
import org.apache.beam.sdk.fn.server.GrpcFnServer;
import org.apache.beam.sdk.io.TextIO;
import org.apache.beam.sdk.options.Default;
import org.apache.beam.sdk.options.Description;
import org.apache.beam.sdk.options.PipelineOptions;
import org.apache.beam.sdk.options.PipelineOptionsFactory;
import org.apache.beam.sdk.options.PortablePipelineOptions;
import org.apache.beam.sdk.options.Validation;
import org.apache.beam.sdk.schemas.Schema;
import org.apache.beam.sdk.schemas.Schema.FieldType;
import org.apache.beam.sdk.schemas.SchemaTranslation;
import org.apache.beam.sdk.transforms.MapElements;
import org.apache.beam.sdk.util.construction.External;
import org.apache.beam.sdk.values.PBegin;
import org.apache.beam.sdk.values.PCollection;
import org.apache.beam.sdk.values.PCollectionTuple;
import org.apache.beam.sdk.values.Row;
import org.apache.beam.sdk.values.TupleTag;
import org.apache.beam.sdk.values.TypeDescriptors;
import org.apache.beam.vendor.grpc.v1p60p1.com.google.protobuf.ByteString;

/**
 * A Java pipeline that reads every record under an S3 prefix with s3io, served by the Go
 * expansion service cmd/s3io-expansion, and writes them as lines of text. It is the Java glue
 * of the README's "From Python, Java and YAML", as integration/xlang/java_test.go runs it.
 *
 * <p>{@code --transform=plain} applies {@code beam:transform:spate-io:s3io:read:v1} (records as
 * byte[]); {@code --transform=schema} applies the schema transform {@code
 * beam:schematransform:spate-io:s3io:read:v1} (Rows with one field, {@code record}); {@code
 * --transform=failures} applies {@code beam:transform:spate-io:s3io:read_with_failures:v1}, whose
 * second output holds a Row per quarantined object.
 */
public class ReadFromS3 {
  /** Where to read, where the service is, and where to write. */
  public interface Options extends PipelineOptions {
    @Description("host:port of s3io-expansion")
    @Validation.Required
    String getExpansionService();

    void setExpansionService(String value);

    @Description("plain or failures (ExternalConfigurationPayload), schema (SchemaTransformPayload)")
    @Default.String("plain")
    String getTransform();

    void setTransform(String value);

    @Validation.Required
    String getBucket();

    void setBucket(String value);

    String getPrefix();

    void setPrefix(String value);

    @Description("S3 endpoint URL; empty for AWS")
    String getEndpoint();

    void setEndpoint(String value);

    @Description("text files are written as OUTPUT-*")
    @Validation.Required
    String getOutput();

    void setOutput(String value);

    @Description("with --transform=failures: quarantined objects are written as FAILURES-*")
    String getFailuresOutput();

    void setFailuresOutput(String value);
  }

  // The configuration: any of the service's fields (bucket required, the rest nullable).
  static final Schema CONFIG =
      Schema.builder()
          .addStringField("bucket")
          .addNullableField("prefix", FieldType.STRING)
          .addNullableField("endpoint", FieldType.STRING)
          .addNullableField("use_path_style", FieldType.BOOLEAN)
          .build();

  static ByteString encode(Row row) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    RowCoder.of(row.getSchema()).encode(row, out);
    return ByteString.copyFrom(out.toByteArray());
  }

  /** The payload of the plain URNs: what Python's NamedTupleBasedPayloadBuilder builds. */
  static byte[] configPayload(Row config) throws IOException {
    return ExternalConfigurationPayload.newBuilder()
        .setSchema(SchemaTranslation.schemaToProto(config.getSchema(), true))
        .setPayload(encode(config))
        .build()
        .toByteArray();
  }

  /** The records under the prefix as byte[], through the plain URN. */
  static PCollection<byte[]> readPlain(Pipeline p, Row config, String service) throws IOException {
    byte[] payload = configPayload(config);
    return p.apply(
        "ReadFromS3",
        External.<PBegin, byte[]>of("beam:transform:spate-io:s3io:read:v1", payload, service));
  }

  /** The records ("records", byte[]) and quarantined objects ("failures", Rows). */
  static PCollectionTuple readWithFailures(Pipeline p, Row config, String service)
      throws IOException {
    byte[] payload = configPayload(config);
    return p.apply(
        "ReadFromS3WithFailures",
        External.<PBegin, Object>of(
                "beam:transform:spate-io:s3io:read_with_failures:v1", payload, service)
            .withMultiOutputs());
  }

  /** The records under the prefix as Rows (record: bytes), through the schema transform. */
  static PCollection<Row> readRows(Pipeline p, Row config, String service) throws IOException {
    byte[] payload =
        SchemaTransformPayload.newBuilder()
            .setIdentifier("beam:schematransform:spate-io:s3io:read:v1")
            .setConfigurationSchema(SchemaTranslation.schemaToProto(config.getSchema(), true))
            .setConfigurationRow(encode(config))
            .build()
            .toByteArray();
    return p.apply(
        "ReadFromS3",
        External.<PBegin, Row>of("beam:expansion:payload:schematransform:v1", payload, service));
  }

  public static void main(String[] args) throws Exception {
    Options opts = PipelineOptionsFactory.fromArgs(args).withValidation().as(Options.class);
    // Beam Java before apache/beam#34678 builds the default environment when External expands,
    // before PortableRunner starts the LOOPBACK worker: start it here, as PortableRunner would.
    GrpcFnServer<ExternalWorkerService> loopback = null;
    PortablePipelineOptions portable = opts.as(PortablePipelineOptions.class);
    if ("LOOPBACK".equals(portable.getDefaultEnvironmentType())) {
      loopback = new ExternalWorkerService(opts).start();
      portable.setDefaultEnvironmentType("EXTERNAL");
      portable.setDefaultEnvironmentConfig(loopback.getApiServiceDescriptor().getUrl());
    }
    Row config =
        Row.withSchema(CONFIG)
            .withFieldValue("bucket", opts.getBucket())
            .withFieldValue("prefix", opts.getPrefix())
            .withFieldValue("endpoint", opts.getEndpoint())
            // Servers other than AWS (versitygw, MinIO) serve buckets by path, not host name.
            .withFieldValue("use_path_style", opts.getEndpoint() != null ? true : null)
            .build();
    Pipeline p = Pipeline.create(opts);
    PCollection<String> lines;
    switch (opts.getTransform()) {
      case "plain":
        lines =
            readPlain(p, config, opts.getExpansionService())
                .apply(
                    MapElements.into(TypeDescriptors.strings())
                        .via(b -> new String(b, StandardCharsets.UTF_8)));
        break;
      case "schema":
        lines =
            readRows(p, config, opts.getExpansionService())
                .apply(
                    MapElements.into(TypeDescriptors.strings())
                        .via(r -> new String(r.getBytes("record"), StandardCharsets.UTF_8)));
        break;
      case "failures":
        PCollectionTuple read = readWithFailures(p, config, opts.getExpansionService());
        read.get(new TupleTag<Row>("failures"))
            .apply(
                MapElements.into(TypeDescriptors.strings())
                    .via(f -> f.getString("key") + " " + f.getString("reason")))
            .apply("WriteFailures", TextIO.write().to(opts.getFailuresOutput()));
        lines =
            read.get(new TupleTag<byte[]>("records"))
                .apply(
                    MapElements.into(TypeDescriptors.strings())
                        .via(b -> new String(b, StandardCharsets.UTF_8)));
        break;
      default:
        throw new IllegalArgumentException(
            "--transform=" + opts.getTransform() + ": want plain, schema or failures");
    }
    lines.apply(TextIO.write().to(opts.getOutput()));
    try {
      PipelineResult.State state = p.run().waitUntilFinish();
      if (state != PipelineResult.State.DONE) {
        throw new IllegalStateException("pipeline finished " + state);
      }
    } finally {
      if (loopback != null) {
        loopback.close();
      }
    }
  }
}
