package dev.rxingest.essecurity;

import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.email.UAX29URLEmailTokenizer;
import org.apache.lucene.analysis.pattern.PatternCaptureGroupTokenFilter;
import org.elasticsearch.index.analysis.TokenFilterFactory;
import org.elasticsearch.index.analysis.TokenizerFactory;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.Plugin;

import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The three analysis components that the .security index's settings use
 * (SecuritySystemIndices: analyzer "email" = uax_url_email + pattern_capture + lowercase + unique),
 * built from the Lucene classes the server already ships. Same names and settings as the
 * analysis-common module's, so the real module can replace this plugin.
 */
public class SecurityAnalysisPlugin extends Plugin implements AnalysisPlugin {

    @Override
    public Map<String, AnalysisProvider<TokenFilterFactory>> getTokenFilters() {
        return Map.of(
            "pattern_capture",
            AnalysisPlugin.requiresAnalysisSettings((indexSettings, env, name, settings) -> {
                List<String> patterns = settings.getAsList("patterns");
                if (patterns.isEmpty()) {
                    throw new IllegalArgumentException("pattern_capture filter [" + name + "] needs [patterns]");
                }
                Pattern[] compiled = patterns.stream().map(Pattern::compile).toArray(Pattern[]::new);
                boolean preserveOriginal = settings.getAsBoolean("preserve_original", true);
                return filter(name, in -> new PatternCaptureGroupTokenFilter(in, preserveOriginal, compiled));
            }),
            "unique",
            (indexSettings, env, name, settings) -> {
                boolean samePosition = settings.getAsBoolean("only_on_same_position", false);
                return filter(name, in -> new UniqueTokenFilter(in, samePosition));
            }
        );
    }

    @Override
    public Map<String, AnalysisProvider<TokenizerFactory>> getTokenizers() {
        return Map.of(
            "uax_url_email",
            (indexSettings, env, name, settings) -> {
                int maxTokenLength = settings.getAsInt("max_token_length", 255);
                return TokenizerFactory.newFactory(name, () -> {
                    UAX29URLEmailTokenizer tokenizer = new UAX29URLEmailTokenizer();
                    tokenizer.setMaxTokenLength(maxTokenLength);
                    return tokenizer;
                });
            }
        );
    }

    private static TokenFilterFactory filter(String name, java.util.function.UnaryOperator<TokenStream> make) {
        return new TokenFilterFactory() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public TokenStream create(TokenStream in) {
                return make.apply(in);
            }
        };
    }
}
