/*
 * groundkit's Lucene peer: BM25 exactly as Lucene (and so Anserini) ranks it.
 *
 * Documents are indexed in order (Lucene's document number is the unit's position), with
 * EnglishAnalyzer and BM25Similarity(k1, b), into one segment. A query is Anserini's bag of
 * words: the analysed terms, each a SHOULD TermQuery boosted by how often it occurs.
 *
 *   serve DOCS [k1 b [whitespace]]
 *                                index DOCS in memory ("whitespace": the texts are terms
 *                                already, split at spaces, not analysed), print "ready N MS
 *                                TERMS" (documents, milliseconds to index, tokens indexed),
 *                                then answer one
 *                                query per stdin line ("DEPTH<TAB>QUERY") with one line:
 *                                its analysed terms, a tab, then "POSITION:SCORE" pairs,
 *                                best first (nothing after the tab: no hit)
 *   bench build DOCS DIR [k1 b]  bench/bench_bm25.py's build phase: index DOCS into DIR on disk
 *                                (one thread: SerialMergeScheduler), timed from the texts in
 *                                memory to the closed writer; prints one JSON line
 *   bench query QUERIES DIR [k1 b] its query phase: open DIR, answer QUERIES untimed, at least
 *                                twice and at least -Dgroundkit.warmQueries (10,000) queries in
 *                                all (warm: class loading, JIT, page cache), then time each once
 *                                more at depth 10 (wall and thread CPU); prints one JSON line
 *
 * DOCS and QUERIES hold one text per line, with backslash escapes for \t, \n, \r and \\.
 */
import java.io.*;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.core.WhitespaceAnalyzer;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.*;
import org.apache.lucene.search.*;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;

public final class GroundkitLucene {
    private static final String FIELD = "contents";

    public static void main(String[] args) throws Exception {
        if (args.length >= 2 && args[0].equals("serve")) {
            Analyzer analyzer = args.length >= 5 && args[4].equals("whitespace")
                    ? new WhitespaceAnalyzer() : new EnglishAnalyzer();
            serve(Paths.get(args[1]), similarity(args, 2), analyzer);
        } else if (args.length >= 4 && args[0].equals("bench") && args[1].equals("build")) {
            LuceneBench.build(Paths.get(args[2]), Paths.get(args[3]), similarity(args, 4));
        } else if (args.length >= 4 && args[0].equals("bench") && args[1].equals("query")) {
            LuceneBench.query(Paths.get(args[2]), Paths.get(args[3]), similarity(args, 4));
        } else {
            System.err.println("usage: GroundkitLucene serve DOCS [k1 b]"
                    + " | bench build DOCS DIR [k1 b] | bench query QUERIES DIR [k1 b]");
            System.exit(2);
        }
    }

    private static BM25Similarity similarity(String[] args, int at) {
        if (args.length >= at + 2) {
            return new BM25Similarity(Float.parseFloat(args[at]), Float.parseFloat(args[at + 1]));
        }
        return new BM25Similarity(0.9f, 0.4f);
    }

    static String unescape(String line) {
        if (line.indexOf('\\') < 0) return line;
        StringBuilder out = new StringBuilder(line.length());
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (c == '\\' && i + 1 < line.length()) {
                char n = line.charAt(++i);
                out.append(n == 't' ? '\t' : n == 'n' ? '\n' : n == 'r' ? '\r' : n);
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    static List<String> lines(Path path) throws IOException {
        List<String> out = new ArrayList<>();
        try (BufferedReader in = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
            for (String line; (line = in.readLine()) != null; ) out.add(unescape(line));
        }
        return out;
    }

    /** Index ``docs`` in order into one segment; returns the milliseconds it took. */
    static long build(Directory dir, List<String> docs, Analyzer analyzer, BM25Similarity sim)
            throws IOException {
        long start = System.nanoTime();
        IndexWriterConfig config = new IndexWriterConfig(analyzer)
                .setSimilarity(sim)
                .setOpenMode(IndexWriterConfig.OpenMode.CREATE)
                .setMergePolicy(new LogDocMergePolicy())  // merges keep document order
                .setRAMBufferSizeMB(256);
        try (IndexWriter writer = new IndexWriter(dir, config)) {
            for (String text : docs) {
                Document doc = new Document();
                doc.add(new TextField(FIELD, text, Field.Store.NO));
                writer.addDocument(doc);
            }
            writer.forceMerge(1);
        }
        return (System.nanoTime() - start) / 1_000_000;
    }

    /** The terms ``analyzer`` makes of ``text``, in order. */
    static List<String> analyse(Analyzer analyzer, String text) throws IOException {
        List<String> terms = new ArrayList<>();
        try (TokenStream stream = analyzer.tokenStream(FIELD, text)) {
            CharTermAttribute term = stream.addAttribute(CharTermAttribute.class);
            stream.reset();
            while (stream.incrementToken()) terms.add(term.toString());
            stream.end();
        }
        return terms;
    }

    static Query query(Analyzer analyzer, String text) throws IOException {
        return query(analyse(analyzer, text));
    }

    /** Anserini's bag-of-words query: each analysed term once, boosted by its count. */
    static Query query(List<String> terms) {
        Map<String, Integer> counts = new LinkedHashMap<>();
        for (String t : terms) counts.merge(t, 1, Integer::sum);
        BooleanQuery.Builder builder = new BooleanQuery.Builder();
        for (Map.Entry<String, Integer> e : counts.entrySet()) {
            Query q = new TermQuery(new Term(FIELD, e.getKey()));
            builder.add(new BoostQuery(q, e.getValue()), BooleanClause.Occur.SHOULD);
        }
        return builder.build();
    }

    static void serve(Path docsPath, BM25Similarity sim, Analyzer analyzer) throws IOException {
        List<String> docs = lines(docsPath);
        Directory dir = new ByteBuffersDirectory();
        long ms = build(dir, docs, analyzer, sim);
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
            IndexSearcher searcher = new IndexSearcher(reader);
            searcher.setSimilarity(sim);
            PrintStream out = new PrintStream(new BufferedOutputStream(System.out), false, "UTF-8");
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            // the collection's term count: with the document count, its average length
            long indexed = reader.getSumTotalTermFreq(FIELD);
            out.println("ready " + docs.size() + " " + ms + " " + indexed);
            out.flush();
            for (String line; (line = in.readLine()) != null; ) {
                int tab = line.indexOf('\t');
                int depth = Integer.parseInt(line.substring(0, tab));
                List<String> terms = analyse(analyzer, unescape(line.substring(tab + 1)));
                Query q = query(terms);
                StringBuilder reply = new StringBuilder();
                if (depth > 0) {
                    // every hit counted exactly: no early termination changes the ranking
                    TopScoreDocCollector collector = TopScoreDocCollector.create(depth, Integer.MAX_VALUE);
                    searcher.search(q, collector);
                    for (ScoreDoc sd : collector.topDocs().scoreDocs) {
                        if (reply.length() > 0) reply.append(' ');
                        reply.append(sd.doc).append(':').append(sd.score);
                    }
                }
                out.print(String.join(" ", terms));
                out.print('\t');
                out.println(reply);
                out.flush();
            }
        }
    }
}

/**
 * The bench subcommand: bench/bench_bm25.py's build and query phases for Lucene, each in a
 * JVM of its own (as every engine there runs each phase in a process of its own). JVM
 * start-up is outside every figure; the build phase's figures include the JIT compiling
 * Lucene's indexing code as it runs, the query phase's timed pass comes after untimed passes
 * over the same queries (WARM_QUERIES). Figures are printed as one JSON line.
 */
final class LuceneBench {
    private static final int DEPTH = 10;
    /** Untimed queries before the timed pass: at least two passes over the queries and at
     *  least this many (the JIT's C2 tier compiles a method after some thousands of calls). */
    private static final int WARM_QUERIES = Integer.getInteger("groundkit.warmQueries", 10_000);

    static void build(Path docsPath, Path indexPath, BM25Similarity sim) throws IOException {
        Analyzer analyzer = new EnglishAnalyzer();
        List<String> docs = GroundkitLucene.lines(docsPath);
        long rssBefore = statusKb("VmRSS:");
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long gc0 = gcMs();
        long cpu0 = processCpuNs();
        long thread0 = threads.getCurrentThreadCpuTime();
        long start = System.nanoTime();
        IndexWriterConfig config = new IndexWriterConfig(analyzer)
                .setSimilarity(sim)
                .setOpenMode(IndexWriterConfig.OpenMode.CREATE)
                .setMergePolicy(new LogDocMergePolicy())  // merges keep document order
                .setMergeScheduler(new SerialMergeScheduler())  // merges on this thread
                .setRAMBufferSizeMB(256);
        try (Directory dir = FSDirectory.open(indexPath); IndexWriter writer = new IndexWriter(dir, config)) {
            for (String text : docs) {
                Document doc = new Document();
                doc.add(new TextField("contents", text, Field.Store.NO));
                writer.addDocument(doc);
            }
            writer.forceMerge(1);
        }
        long ns = System.nanoTime() - start;
        long threadNs = threads.getCurrentThreadCpuTime() - thread0;
        long cpuNs = processCpuNs() - cpu0;
        long bytes = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(indexPath)) {
            for (Path f : files) bytes += Files.size(f);
        }
        System.out.println("{\"phase\": \"build\", \"docs\": " + docs.size() + ", \"build_ms\": " + ns / 1e6
                + ", \"build_cpu_ms\": " + cpuNs / 1e6 + ", \"build_thread_cpu_ms\": " + threadNs / 1e6
                + ", \"gc_ms\": " + (gcMs() - gc0) + ", \"index_bytes\": " + bytes
                + ", \"rss_before_kb\": " + rssBefore + ", \"peak_rss_kb\": " + statusKb("VmHWM:")
                + ", " + facts() + "}");
    }

    static void query(Path queriesPath, Path indexPath, BM25Similarity sim) throws IOException {
        Analyzer analyzer = new EnglishAnalyzer();
        List<String> queries = GroundkitLucene.lines(queriesPath);
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long rssBase = statusKb("VmRSS:");
        long openStart = System.nanoTime();
        try (Directory dir = FSDirectory.open(indexPath); DirectoryReader reader = DirectoryReader.open(dir)) {
            IndexSearcher searcher = new IndexSearcher(reader);
            searcher.setSimilarity(sim);
            searcher.setQueryCache(null);  // every timed query is scored afresh
            long openNs = System.nanoTime() - openStart;
            long rssLoaded = statusKb("VmRSS:");
            long checksum = 0;
            int passes = Math.max(2, (WARM_QUERIES + queries.size() - 1) / Math.max(1, queries.size()));
            for (int pass = 0; pass < passes; pass++) {  // warm: class loading, JIT, page cache
                for (String text : queries) {
                    checksum += searcher.search(GroundkitLucene.query(analyzer, text), DEPTH).scoreDocs.length;
                }
            }
            StringBuilder wall = new StringBuilder();
            StringBuilder cpu = new StringBuilder();
            int withHits = 0;
            long gc0 = gcMs();
            for (String text : queries) {
                long cpu0 = threads.getCurrentThreadCpuTime();  // read outside the wall clock
                long t = System.nanoTime();
                TopDocs top = searcher.search(GroundkitLucene.query(analyzer, text), DEPTH);
                long ns = System.nanoTime() - t;
                long cpuNs = threads.getCurrentThreadCpuTime() - cpu0;
                checksum += top.scoreDocs.length;
                withHits += top.scoreDocs.length > 0 ? 1 : 0;
                if (wall.length() > 0) {
                    wall.append(',');
                    cpu.append(',');
                }
                wall.append(ns / 1000.0);
                cpu.append(cpuNs / 1000.0);
            }
            System.out.println("{\"phase\": \"query\", \"docs\": " + reader.numDocs() + ", \"open_us\": " + openNs / 1e3
                    + ", \"rss_base_kb\": " + rssBase + ", \"rss_loaded_kb\": " + rssLoaded
                    + ", \"rss_after_kb\": " + statusKb("VmRSS:") + ", \"peak_rss_kb\": " + statusKb("VmHWM:")
                    + ", \"warm_passes\": " + passes + ", \"warm_queries\": " + passes * queries.size()
                    + ", \"checksum\": " + checksum
                    + ", \"queries_with_hits\": " + withHits + ", \"timed_gc_ms\": " + (gcMs() - gc0)
                    + ", " + facts()
                    + ", \"query_us\": [" + wall + "], \"query_cpu_us\": [" + cpu + "]}");
        }
    }

    /** The JVM, Lucene and heap facts every phase reports, as JSON members. */
    static String facts() {
        String jvm = System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version");
        List<String> gcs = new ArrayList<>();
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) gcs.add(gc.getName());
        return "\"jvm\": \"" + jvm.replace("\"", "'") + "\", \"java_version\": \"" + System.getProperty("java.version")
                + "\", \"lucene\": \"" + org.apache.lucene.util.Version.LATEST + "\", \"heap_max_bytes\": "
                + Runtime.getRuntime().maxMemory() + ", \"gc\": \"" + String.join(", ", gcs)
                + "\", \"jvm_flags\": \"" + String.join(" ", ManagementFactory.getRuntimeMXBean().getInputArguments())
                        .replace("\\", "/").replace("\"", "'") + "\"";
    }

    /** CPU time of the whole JVM (every thread: JIT compilers and GC included), ns. */
    static long processCpuNs() {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean) {
            return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
        }
        return -1;
    }

    static long gcMs() {
        long ms = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) ms += Math.max(0, gc.getCollectionTime());
        return ms;
    }

    /** A /proc/self/status figure (VmRSS:, VmHWM:) in KiB; -1 where /proc does not say. */
    static long statusKb(String key) {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
                if (line.startsWith(key)) return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        } catch (IOException e) {
            return -1;
        }
        return -1;
    }
}
